"""Degenerate but valid WAVs through the evaluate phase's scoring step with the real models: a NaN score and a
clip too short for a scorer are per-sample errors with a reason; neighbours in the batch keep their scores."""

from __future__ import annotations

import numpy as np
import soundfile as sf

from clonebench.core.hashing import HashCache
from clonebench.evaluate.execution import chunk
from tests.conftest import score_item


def test_nan_sim_is_an_error_not_a_score(ecapa, human_speech, tmp_path):
    real = sorted(human_speech["librivox"])
    loud = tmp_path / "loud.wav"  # finite float samples, so a valid WAV; its Fbank overflows to NaN
    sf.write(str(loud), np.random.default_rng(0).normal(0, 1e30, 16000).astype(np.float32), 16000, subtype="FLOAT")
    items = [score_item(real[1], real[0], sample_id="ok1"), score_item(loud, real[0], sample_id="nan"),
             score_item(real[2], real[0], sample_id="ok2")]
    records = chunk.score(ecapa, items)
    assert [r.sample_id for r in records] == ["ok1", "nan", "ok2"]
    assert records[0].ok and records[2].ok
    assert not records[1].ok and "sim=nan is not finite" in records[1].error


def test_ecapa_minimum_duration(ecapa, human_speech, tmp_path):
    """ECAPA needs 0.04 s (640 samples at 16 kHz); one sample less is a per-sample error, at any rate."""
    real = sorted(human_speech["librivox"])
    data, rate = sf.read(str(real[0]))
    clips = {}
    for name, sr, n in (("just_enough", 16000, 640), ("too_short", 16000, 639), ("too_short_44k", 44100, 1763),
                        ("enough_44k", 44100, 1764)):
        clips[name] = tmp_path / f"{name}.wav"
        segment = data[rate: rate + n] if sr == rate else np.resize(data[rate: rate + 2000], n)
        sf.write(str(clips[name]), segment, sr)
    records = {r.sample_id: r for r in chunk.score(ecapa, [score_item(p, real[1], sample_id=k)
                                                            for k, p in clips.items()])}
    assert records["just_enough"].ok and records["enough_44k"].ok
    for name in ("too_short", "too_short_44k"):
        assert "shorter than the 0.04 s that the ecapa scorer can use" in records[name].error
    # a too-short TARGET recording fails the pair too
    record = chunk.score(ecapa, [score_item(real[1], clips["too_short"], sample_id="t")])[0]
    assert record.error.startswith("target audio is 0.0399 s")


def test_stoi_minimum_is_one_sample(human_speech, tmp_path):
    from clonebench.evaluate.scorers.stoi import STOIScorer

    real = sorted(human_speech["librivox"])
    one = tmp_path / "one.wav"
    sf.write(str(one), np.array([0.1]), 16000)
    scorer = STOIScorer({}, "cpu", HashCache(None))
    scorer.load()
    record = chunk.score(scorer, [score_item(one, real[0], sample_id="one")])[0]
    assert record.ok and -1.0 <= record.values["stoi"] <= 1.0
