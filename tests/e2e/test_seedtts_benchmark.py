"""Seed-TTS-eval end to end on a synthetic benchmark in its layout (demo/seedtts_dataset.py: LibriVox prompts for
test-en, eSpeak NG Mandarin for test-zh and test-hard): each meta list generated against the stand-in over HTTP and
scored with the benchmark's own protocol on tiny RANDOM checkpoints in the real formats (transformers Whisper,
FunASR Paraformer, the WavLM ECAPA-TDNN verifier), a folder of <utt>.wav made elsewhere scored too, and the results
printed per test set with coverage, missing outputs counted as failures or, marked, skipped."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys

import pytest

from clonebench.core.hashing import sha256_file
from clonebench.demo.seedtts_dataset import build_seedtts_benchmark
from clonebench.standin.process import start_process
from tests.conftest import REPO

pytest.importorskip("transformers")
pytest.importorskip("funasr")


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    from tests.tiny_models import write_tiny_hf_whisper, write_tiny_paraformer, write_tiny_seedtts_verifier

    root = tmp_path_factory.mktemp("seedtts_models")
    verifier = write_tiny_seedtts_verifier(root / "wavlm_large_finetune.pth")
    paraformer = write_tiny_paraformer(root / "paraformer-zh")
    whisper = write_tiny_hf_whisper(root / "whisper-large-v3")
    return [f"evaluation.seedtts.whisper_local_path={whisper}",
            f"evaluation.seedtts.whisper_sha256={sha256_file(whisper / 'model.safetensors')}",
            f"evaluation.seedtts.paraformer_local_path={paraformer}",
            f"evaluation.seedtts.paraformer_sha256={sha256_file(paraformer / 'model.pt')}",
            f"evaluation.seedtts.verifier_checkpoint={verifier}", f"evaluation.seedtts.sha256={sha256_file(verifier)}"]


def metrics_for(name: str) -> str:
    return "evaluation.metrics=[seed_wer_en,seed_sim]" if name == "test-en" else \
        "evaluation.metrics=[seed_wer_zh,seed_sim]"


def test_generate_score_and_report_every_test_set(tmp_path, checkpoints):
    lists = build_seedtts_benchmark(tmp_path / "seedtts")
    server, url = start_process(tmp_path / "url", max_lifetime=900)
    runs = {}
    try:
        for name, meta in lists.items():
            result = subprocess.run(
                [sys.executable, "run_vc.py", "--config-name", "demo", f"paths.results_dir={tmp_path / 'results'}",
                 f"adversary.endpoint_url={url}/v1/tts", f"dataset.manifest_filename={meta}", "dataset.root_path=null",
                 f"run_name={name}", metrics_for(name), *checkpoints],
                cwd=REPO, capture_output=True, text=True, timeout=600)
            assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
            (runs[name],) = sorted((tmp_path / "results" / name).glob("2*-*"))
    finally:
        server.terminate()
        server.wait(timeout=30)
    for name, run in runs.items():
        manifest = json.loads((run / "scoring_manifest.json").read_text())
        groups = set(manifest["scorers"])
        assert groups == ({"seedtts_whisper", "seedtts_sim"} if name == "test-en" else
                          {"seedtts_paraformer", "seedtts_sim"})
        with open(run / "generation_sample_metrics.csv", newline="") as handle:
            rows = list(csv.DictReader(handle))
        column = "seed_wer_en" if name == "test-en" else "seed_wer_zh"
        assert rows and all(r[column] != "" and -1.0 <= float(r["seed_sim"]) <= 1.0 for r in rows)
    shown = subprocess.run([sys.executable, "-m", "clonebench.cli.main", "seedtts", *map(str, runs.values()),
                            "--with-published"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert [line.split("|")[1].strip() for line in lines[2:5]] == ["test-zh", "test-en", "test-hard"]
    assert "| 4/4 |" in lines[3] and "counted as failures" in lines[3]
    assert "| Seed-TTS (ICL) (published) | 1.12 | 0.796 | 2.25 | 0.762 | – | – |" in shown.stdout

    # a folder made elsewhere, named as the benchmark's scripts name outputs (<utt>.wav), one output missing
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    with open(runs["test-en"] / "generation_sample_metrics.csv", newline="") as handle:
        made = [(r["pair_id"], r["generated_audio"]) for r in csv.DictReader(handle)]
    for pair_id, audio in made[:-1]:
        shutil.copyfile(runs["test-en"] / audio, folder / f"{pair_id}.wav")  # recorded relative to the run
    scored = subprocess.run(
        [sys.executable, "-m", "clonebench.cli.main", "score", "--manifest", str(lists["test-en"]), "--generated",
         str(folder), "--output", str(tmp_path / "scored"), "--config-name", "demo", metrics_for("test-en"),
         *checkpoints], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert scored.returncode == 1, scored.stdout[-2000:] + scored.stderr[-2000:]  # partial: one output missing
    assert "missing" in scored.stdout
    counted = subprocess.run([sys.executable, "-m", "clonebench.cli.main", "seedtts",
                              f"test-en={tmp_path / 'scored' / 'test-en'}", "--format", "json"],
                             cwd=REPO, capture_output=True, text=True, timeout=120)
    assert counted.returncode == 0, counted.stderr
    (entry,) = json.loads(counted.stdout)
    assert entry["listed"] == 4 and entry["scored"]["seed_sim"] == 3 and entry["rule"] == "count"
    skipped = subprocess.run([sys.executable, "-m", "clonebench.cli.main", "seedtts", f"test-en={tmp_path / 'scored' / 'test-en'}",
                              "--skip-missing", "--format", "json"], cwd=REPO, capture_output=True, text=True,
                             timeout=120)
    (skip,) = json.loads(skipped.stdout)
    assert skip["metrics"]["seed_sim"]["n"] == 3 and entry["metrics"]["seed_sim"]["n"] == 4
    assert skip["metrics"]["seed_sim"]["mean"] >= entry["metrics"]["seed_sim"]["mean"] - 1e-12

    # runs that travel: the three runs moved elsewhere (the originals gone) give the same summary, read from the copies
    moved = {name: tmp_path / "moved" / name / run.name for name, run in runs.items()}
    for name, run in runs.items():
        moved[name].parent.mkdir(parents=True)
        shutil.move(str(run), moved[name])
    again = subprocess.run([sys.executable, "-m", "clonebench.cli.main", "seedtts", *map(str, moved.values()),
                            "--with-published"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert again.stdout == shown.stdout and not any(run.exists() for run in runs.values())
