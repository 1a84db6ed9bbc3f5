"""MOS (UTMOS22-strong via SpeechMOS) and emotion match (SpeechBrain IEMOCAP): their loading, locking, scoring
and reporting plumbing, run with TINY STAND-IN MODEL FOLDERS written by tests/tiny_models.py (the real weights
are not available offline; the numbers these stand-ins give mean nothing)."""

from __future__ import annotations

import csv
import dataclasses
import json

import pytest
import soundfile as sf

from clonebench.cli.main import main as cli
from clonebench.core.hashing import HashCache
from clonebench.evaluate.protocols.assets import AssetError
from clonebench.evaluate.scorers import emotion, utmos
from clonebench.runs.pipeline import run
from clonebench.standin import running_standin
from tests.conftest import compose, score_item
from tests.tiny_models import write_tiny_emotion, write_tiny_utmos


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """Stand-in model folders; the emotion lock is replaced by the stand-in files' hashes for this test only."""
    lock = write_tiny_emotion(tmp_path / "tiny_emotion", tmp_path / "tiny_base")
    monkeypatch.setattr(emotion, "EMOTION", dataclasses.replace(emotion.EMOTION, lock=lock))
    return {"utmos_sha": write_tiny_utmos(tmp_path / "tiny_utmos"), "utmos": tmp_path / "tiny_utmos",
            "emotion": tmp_path / "tiny_emotion", "base": tmp_path / "tiny_base"}


def test_utmos_refuses_unlocked_or_mismatched_weights(tiny, tmp_path):
    options = {"local_dir": tiny["utmos"], "weights": None, "sha256": None, "allow_hub": False}
    with pytest.raises(AssetError, match="no sha256 lock is recorded.*evaluation.utmos.sha256"):
        utmos.UTMOSScorer(options, "cpu", HashCache(None)).load()
    with pytest.raises(AssetError, match="sha256 .* the lock"):
        utmos.UTMOSScorer({**options, "sha256": "0" * 64}, "cpu", HashCache(None)).load()
    with pytest.raises(AssetError, match="allow_hub is false"):
        utmos.UTMOSScorer({**options, "local_dir": None, "sha256": tiny["utmos_sha"]}, "cpu", HashCache(None)).load()


def test_utmos_scores_mono_24khz_one_clip_per_call(tiny, tmp_path, human_speech):
    clip = next(iter(human_speech["librivox"]))
    samples, rate = sf.read(clip, always_2d=True)
    stereo = tmp_path / "stereo.wav"
    sf.write(stereo, samples.repeat(2, axis=1), rate)
    scorer = utmos.UTMOSScorer({"local_dir": tiny["utmos"], "weights": None, "sha256": tiny["utmos_sha"],
                                "allow_hub": False}, "cpu", HashCache(None))
    scorer.load()
    records = scorer.score_batch([score_item(clip), score_item(stereo, sample_id="stereo")])
    # the stand-in returns seconds at 24 kHz + the offset (2.0) it can only have from the verified weights file
    expected = len(samples) / rate + 2.0
    assert [r.values["mos"] for r in records] == pytest.approx([expected, expected], abs=1e-4)
    assert scorer.protocol()["weights_sha256"] == tiny["utmos_sha"] and "unverified" in scorer.version()


def test_emotion_labels_target_and_generated_and_checks_the_lock(tiny, tmp_path, human_speech):
    clip = next(iter(human_speech["librivox"]))
    samples, rate = sf.read(clip)
    quiet = tmp_path / "quiet.wav"
    sf.write(quiet, samples * 0.001, rate)
    options = {"local_dir": tiny["emotion"], "base_dir": tiny["base"], "allow_hub": False}
    scorer = emotion.EmotionScorer(options, "cpu", HashCache(None))
    scorer.load()
    try:
        same, other = scorer.score_batch([score_item(clip, clip), score_item(quiet, clip)])
    finally:
        scorer.release()
    assert same.values == {"emotion_match": 1.0, "emotion_target": "ang", "emotion_generated": "ang"}
    assert other.values == {"emotion_match": 0.0, "emotion_target": "ang", "emotion_generated": "sad"}
    (tiny["emotion"] / "model.ckpt").write_bytes(b"tampered")
    with pytest.raises(AssetError, match="model.ckpt .* the lock says"):
        emotion.EmotionScorer(options, "cpu", HashCache(None)).load()


@pytest.mark.slow
def test_mos_and_emotion_columns_through_a_run_and_the_report(tiny, tmp_path, demo_dataset, capsys):
    with running_standin(max_lifetime=600) as server:
        cfg = compose("demo", [f"paths.results_dir={tmp_path / 'results'}", "run_name=paper_columns",
                               f"dataset.manifest_filename={demo_dataset / 'metadata.json'}",
                               f"dataset.root_path={demo_dataset}", f"adversary.endpoint_url={server.url}/v1/tts",
                               "adversary.reference_check=false", "adversary.max_samples=3",
                               "evaluation.metrics=[mos,emotion_match]", f"evaluation.utmos.local_dir={tiny['utmos']}",
                               f"evaluation.utmos.sha256={tiny['utmos_sha']}", "evaluation.utmos.allow_hub=false",
                               f"evaluation.emotion.local_dir={tiny['emotion']}",
                               f"evaluation.emotion.base_dir={tiny['base']}", "evaluation.emotion.allow_hub=false"])
        run(cfg, tmp_path / "results" / "run", "test")
    run_dir = tmp_path / "results" / "run"
    with open(run_dir / "generation_sample_metrics.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 3
    for row in rows:
        assert float(row["mos"]) == pytest.approx(float(row["generated_duration_s"]) + 2.0, abs=1e-4)
        assert row["emotion_target"] in emotion.LABELS and row["emotion_generated"] in emotion.LABELS
        assert float(row["emotion_match"]) == float(row["emotion_target"] == row["emotion_generated"])
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["status"] == "complete" and metrics["metrics"]["mos"]["n_valid"] == 3
    scoring = json.loads((run_dir / "scoring_manifest.json").read_text())
    assert scoring["scorers"]["utmos"]["assets"][0]["verified_scorer"] is False
    assert cli(["report", str(run_dir), "--format", "md", "--with-paper"]) == 0
    md = capsys.readouterr().out
    row = next(line for line in md.splitlines() if line.startswith("| paper_columns |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    header = [c.strip() for c in md.splitlines()[0].strip("|").split("|")]
    assert cells[header.index("MOS↑")].endswith("(n=3/3) †") and cells[header.index("Emo↑")].endswith("(n=3/3) †")
    assert cells[header.index("SIM↑")] == "–" and "† mos: UTMOS22-strong (SpeechMOS) scorer unverified" in md
    assert "† emotion_match: SpeechBrain IEMOCAP emotion scorer unverified" in md
    assert cli(["report", str(run_dir), "--format", "html", "--output", str(tmp_path / "html")]) == 0
    html = (tmp_path / "html" / "index.html").read_text()
    assert 'data-key="mos"' in html and 'data-key="emotion_match"' in html and html.count('class="emo"') == 3
    assert "scorer unverified" in html
