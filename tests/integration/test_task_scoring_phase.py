"""The evaluate phase with core-v1's needs: CER beside WER from one transcription, required unverified scorers whose
assets are not given (the run completes the verified metrics and is ``partial`` naming them), and the pinned
Chinese text requirements refused before any scoring."""

from __future__ import annotations

import csv
import json

import pytest

from clonebench.core.errors import DependencyError
from clonebench.evaluate.protocols import zh_text
from clonebench.runs.pipeline import run
from tests.conftest import compose

pytestmark = pytest.mark.slow
FAST = ["evaluation.whisper.backend=faster_whisper", "evaluation.whisper.model=tiny.en",
        "evaluation.whisper.allow_hub=false", "adversary.max_samples=3", "adversary.retry_initial_delay=0.01",
        "adversary.reference_check=false"]


def _cfg(tmp, data, url, *extra):
    return compose("demo", [f"paths.results_dir={tmp / 'results'}", f"dataset.manifest_filename={data / 'metadata.json'}",
                            f"dataset.root_path={data}", f"adversary.endpoint_url={url}/v1/tts", *FAST, *extra])


@pytest.fixture(scope="module")
def generated(tmp_path_factory, demo_dataset):
    from clonebench.standin import running_standin

    tmp = tmp_path_factory.mktemp("task_scoring")
    with running_standin(max_lifetime=600) as server:
        run(_cfg(tmp, demo_dataset, server.url, "+vc.generate_only=true"), tmp / "results" / "gen", "test")
    return tmp, demo_dataset


def _evaluate_only(generated, name, *extra):
    tmp, data = generated
    cfg = _cfg(tmp, data, "http://127.0.0.1:9", "+vc.evaluate_only=true",
               f"+vc.evaluation.generated_audio_dir={tmp / 'results' / 'gen' / 'generated_audio'}", *extra)
    return tmp / "results" / name, run(cfg, tmp / "results" / name, "test")


def test_missing_unverified_assets_leave_the_run_partial_with_every_verified_metric(generated):
    run_dir, _ = _evaluate_only(generated, "unverified", "evaluation.metrics=[wer,cer,mos,emotion_match]",
                                "evaluation.utmos.allow_hub=false", "evaluation.emotion.allow_hub=false")
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["status"] == "partial"
    assert set(metrics["scorers_not_run"]) == {"utmos", "emotion"}
    assert "utmos scorer not run: it is unverified and its assets were not given" in metrics["reasons"][0]
    assert metrics["metrics"]["mos"]["n_valid"] == 0 and metrics["metrics"]["mos"]["n_requested"] == 3
    assert metrics["metrics"]["emotion_match"]["n_valid"] == 0
    assert metrics["metrics"]["wer"]["n_valid"] == 3 and metrics["metrics"]["cer"]["n_valid"] == 3
    rows = list(csv.DictReader(open(run_dir / "generation_sample_metrics.csv")))
    assert all("utmos: scorer not run" in r["errors"] and "emotion: scorer not run" in r["errors"] for r in rows)
    # CER comes from the same transcription: one Whisper pass, both columns, exact corpus figures
    scoring = json.loads((run_dir / "scoring_manifest.json").read_text())
    assert scoring["scorers"]["whisper"]["metrics"] == ["wer", "cer"] and scoring["scorers"]["whisper"]["scored"] == 3
    assert scoring["scorers"]["utmos"]["status"] == "not_run" and scoring["scorers"]["utmos"]["fingerprint"] is None
    text = scoring["scorers"]["whisper"]["protocol"]["text"]
    assert text["zh"]["converter"]["version"] == zh_text.CONVERTER_VERSION
    cer = metrics["metrics"]["cer"]
    assert cer["corpus_cer"] == sum(int(r["cer_edits"]) for r in rows) / sum(int(r["cer_ref_chars"]) for r in rows)
    assert all(r["text_rule"] == "ascii_punctuation_removed_v2" and r["cer"] for r in rows)


def test_a_converter_other_than_the_pinned_one_is_refused_before_any_scoring(generated, monkeypatch):
    monkeypatch.setattr(zh_text, "CONVERTER_VERSION", "0.0.0")  # as if another OpenCC were installed
    with pytest.raises(DependencyError, match="OpenCC==0.0.0.*installed: 1.4.2"):
        _evaluate_only(generated, "refused", "evaluation.metrics=[mcd,wer]")
    run_dir = generated[0] / "results" / "refused"
    assert not (run_dir / "generation_sample_metrics.csv").exists() and not (run_dir / "metrics.json").exists()
    assert not (run_dir / "metric_cache" / "mcd").exists()  # MCD (scored first, MCD runs beside Whisper) never ran
