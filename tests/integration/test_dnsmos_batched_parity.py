"""Batched DNSMOS (all windows of a clip in one ONNX call, repeated windows once) == speechmos.dnsmos.run within 1e-6."""

from __future__ import annotations

from pathlib import Path

import librosa
import numpy as np
import pytest

from clonebench.evaluate.scorers import dnsmos_batched


@pytest.fixture(scope="module")
def model():
    import speechmos

    d = Path(speechmos.__file__).parent / "dnsmos_models"
    return dnsmos_batched.BatchedDNSMOS(d / "sig_bak_ovr.onnx", d / "model_v8.onnx", threads=1)


def _clips(human_speech):
    lib = [librosa.load(str(p), sr=16_000)[0] for p in list(human_speech["librivox"])[:2]]
    card = librosa.load(str(list(human_speech["cards"])[0]), sr=16_000)[0]
    joined = np.concatenate([lib[0], lib[1]])
    return {"0.4s": card[:6_400], "2.0s (windows repeat)": lib[0][:32_000], "1.1s card": card,
            "9.5s": joined[:152_000], "joined": joined}


def test_equals_speechmos_run(human_speech, model):
    from speechmos import dnsmos

    for name, audio in _clips(human_speech).items():
        expected = dnsmos.run(audio, 16_000)
        got = model(audio)
        for key in ("ovrl_mos", "sig_mos", "bak_mos", "p808_mos"):
            assert abs(got[key] - float(expected[key])) <= 1e-6, (name, key, got[key], expected[key])


def test_windows_match_speechmos_and_repeat_once():
    rng = np.random.default_rng(0)
    two_seconds = rng.uniform(-0.5, 0.5, 32_000).astype(np.float32)
    segments, index = dnsmos_batched.windows(two_seconds)
    assert len(index) == 7 and len(segments) == 2  # 16 s after repetition: 7 windows, 2 distinct
    odd = rng.uniform(-0.5, 0.5, 33_331).astype(np.float32)
    segments, index = dnsmos_batched.windows(odd)
    assert len(segments) == len(index) == 7  # 266,648 samples: 7 windows, none repeated
    with pytest.raises(ValueError, match="at least one sample"):
        dnsmos_batched.windows(np.zeros(0, np.float32))
