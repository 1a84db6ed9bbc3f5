"""``clonebench score --suite``: folders of WAVs made outside clonebench for an rvcbench suite, on the stand-in data
(eSpeak NG recordings in the RVCBench layout, every 4th pair of onboarding-v1's libritts and vctk tasks; core-v1's
audioshift and its derived narrowband task, every 12th pair).

Checked: every bad-file class is printed per id across two tasks before anything is written (a file of one task
is not "extra" for the other); two models scored into suite runs with each task's own protocol (the config's
metric list does not apply), read back by ``clonebench suite`` and ``status`` and by rvcbench's own
``compare_submissions``; ``--resume`` scores nothing again and refuses another request, naming what changed; a
derived task is made from the submitted clips of its source task and scored with its own metrics.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from clonebench.cli.main import main as cli
from tests.conftest import REPO

DEMO = ["--config-name", "demo", "evaluation.whisper.model=tiny.en", "evaluation.metrics=[sim]"]


@pytest.fixture(scope="module")
def small_onboarding(tmp_path_factory):
    from clonebench.demo.suite_dataset import build_suite_standin

    root = tmp_path_factory.mktemp("small_onboarding")
    folder = build_suite_standin("onboarding-v1", root, ["libritts", "vctk"], every=4)
    return folder, root / "dataset"


def _generate(prompts, out, *extra):
    """The stand-in model over a ZipVoice test list: <id>.wav files in ``out``."""
    done = subprocess.run([sys.executable, "-m", "clonebench.standin", "--test-list", str(prompts / "prompts.tsv"),
                           "--res-dir", str(out), *extra], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO}"})
    assert done.returncode == 0, done.stderr[-2000:]
    return out


@pytest.fixture(scope="module")
def prompts(small_onboarding, tmp_path_factory):
    folder, data = small_onboarding
    out = tmp_path_factory.mktemp("prompts") / "prompts"
    assert cli(["prompts", "--suite", str(folder), "--tasks", "libritts", "vctk", "--data-root", str(data),
                "--output", str(out)]) == 0
    return out


def _entries(prompts):
    return [json.loads(line) for line in (prompts / "prompts.jsonl").read_text().splitlines()]


def test_every_bad_file_is_reported_per_id_before_anything_is_written(small_onboarding, prompts, tmp_path, capsys):
    folder, data = small_onboarding
    gen = _generate(prompts, tmp_path / "model")
    lib = [e for e in _entries(prompts) if e["task"] == "libritts"]
    vctk = [e for e in _entries(prompts) if e["task"] == "vctk"]
    assert len(lib) == len(vctk) == 4
    (gen / f"{lib[0]['id']}.wav").unlink()                                           # missing
    (gen / f"{lib[1]['id']}.wav").rename(gen / f"{lib[1]['pair_id']}.wav")            # wrong id (no task prefix)
    buffer = io.BytesIO()
    sf.write(buffer, np.array([0.1, np.nan, 0.2] * 800, dtype=np.float32), 16000, format="WAV", subtype="FLOAT")
    (gen / f"{lib[2]['id']}.wav").write_bytes(buffer.getvalue())                      # non-finite
    rows = {r["pair_id"]: r for r in json.loads((folder / "libritts16_v1.metadata.json").read_text())}
    target = data / "Libritts" / rows[lib[3]["pair_id"]]["target_file_name"]
    shutil.copyfile(target, gen / f"{lib[3]['id']}.wav")                              # leak
    (gen / f"{vctk[0]['id']}.wav").write_text("not audio")                            # unreadable
    (gen / f"{vctk[1]['id']}.wav").write_bytes(b"")                                   # empty
    (gen / "vctk").mkdir()
    shutil.copyfile(gen / f"{vctk[3]['id']}.wav", gen / "vctk" / f"{vctk[2]['pair_id']}.wav")  # ambiguous
    (gen / f"{vctk[3]['id']}.wav").rename(gen / "vctk" / f"{vctk[3]['pair_id']}.wav")   # fine: nested layout
    (gen / "vctk__not-a-pair.wav").write_bytes(b"RIFF")                               # extra, under vctk
    (gen / "notes.txt").write_text("hello")                                           # extra, under the first task
    out = tmp_path / "scores"
    code = cli(["score", "--suite", str(folder), "--tasks", "libritts", "vctk", "--data-root", str(data),
                "--generated", str(gen), "--output", str(out), "--check-only", *DEMO])
    printed = capsys.readouterr().out
    assert code == 1 and not out.exists()
    assert "task libritts: 0/4 usable, missing 1, wrong_id 1, non_finite 1, leak 1, extra 1" in printed
    assert "task vctk: 1/4 usable, ambiguous 1, unreadable 1, empty 1, extra 1" in printed
    for oid, kind in ((lib[0]["id"], "missing"), (lib[1]["id"], "wrong_id"), (lib[2]["id"], "non_finite"),
                      (lib[3]["id"], "leak"), (vctk[0]["id"], "unreadable"), (vctk[1]["id"], "empty"),
                      (vctk[2]["id"], "ambiguous")):
        assert f"  {oid}: {kind}: " in printed
    assert "byte-identical to the hidden target recording" in printed
    assert f"rename it to {lib[1]['id']}.wav" in printed
    assert "extra file (matches no id): notes.txt" in printed
    assert "extra file (matches no id): vctk__not-a-pair.wav" in printed
    assert printed.count("extra file") == 2  # each listed once; the vctk/ file is vctk's, not libritts' extra


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_two_models_become_suite_runs_that_rvcbench_compare_reads(small_onboarding, prompts, tmp_path, capsys):
    from rvcbench.benchmark.comparison import compare_submissions

    folder, data = small_onboarding
    standin = _generate(prompts, tmp_path / "outputs" / "standin")
    noclone = _generate(prompts, tmp_path / "outputs" / "noclone", "--ignore-reference")
    (noclone / f"{_entries(prompts)[0]['id']}.wav").unlink()
    out = tmp_path / "scores"
    argv = ["score", "--suite", str(folder), "--tasks", "libritts", "vctk", "--data-root", str(data),
            "--generated", str(standin), "--generated", str(noclone), "--output", str(out), *DEMO]
    assert cli(argv) == 1  # noclone is partial
    printed = capsys.readouterr().out
    assert f"standin: suite onboarding-v1 complete: {out / 'standin' / 'suite_summary.md'}" in printed
    for model, status in (("standin", "complete"), ("noclone", "partial")):
        run = out / model
        submission = json.loads((run / "submission.json").read_text())
        assert submission["status"] == status and submission["model"] == model
        assert submission["selected_tasks"] == ["libritts", "vctk"] and "outside clonebench" in \
            submission["producer"]["note"]
        record = json.loads((run / "suite_manifest.json").read_text())
        assert record["phase"] == "external+evaluate" and record["status"] == status
        for task in ("libritts", "vctk"):
            scoring = json.loads((run / "tasks" / task / "scoring_manifest.json").read_text())
            assert scoring["task_evaluation"]["metrics"] == ["mcd", "wer", "sim"]  # the suite's, not [sim]
            manifest = json.loads((run / "tasks" / task / "run_manifest.json").read_text())
            assert manifest["generation_provenance"]["protocol"] == "external"
        summary = json.loads((run / "score.json").read_text())
        assert summary["tasks"]["libritts"]["run_dir"] == "tasks/libritts" and summary["suite_status"] == status
    failures = json.loads((out / "noclone" / "submission.json").read_text())["tasks"]["libritts"]["failures"]
    first = _entries(prompts)[0]["pair_id"]
    assert list(failures) == [first] and "neither" in failures[first]
    assert (out / "comparison" / "vctk" / "comparison.md").is_file()
    comparison = compare_submissions([out / "standin", out / "noclone"], tmp_path / "rvcbench_compare")
    assert [m["model"] for m in comparison["models"]] == ["standin", "noclone"]
    assert comparison["protocol_compatible"] is True
    assert cli(["suite", str(out / "standin")]) == 0 and "| vctk |" in capsys.readouterr().out
    assert cli(["compare", str(out / "standin"), str(out / "noclone")]) == 2
    captured = capsys.readouterr()
    assert f"compare one task, e.g. {out / 'standin' / 'tasks' / 'libritts'}" in captured.out + captured.err
    assert cli(["status", str(out / "noclone")]) == 0 and "3/4 generated, 1 failed" in capsys.readouterr().out

    before = {m: json.loads((out / m / "submission.json").read_text())["tasks"] for m in ("standin", "noclone")}
    assert cli([*argv, "--resume"]) == 1
    for model in ("standin", "noclone"):
        again = json.loads((out / model / "submission.json").read_text())["tasks"]
        assert {t: e.get("means") for t, e in again.items()} == {t: e.get("means") for t, e in before[model].items()}
        scoring = json.loads((out / model / "tasks" / "vctk" / "scoring_manifest.json").read_text())
        assert scoring["cache"]["misses"] == 0
    capsys.readouterr()
    assert cli([a for a in argv if a != "vctk"] + ["--resume"]) == 2
    captured = capsys.readouterr()
    assert "was scored with another request: pair_sets" in captured.out + captured.err


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_a_derived_task_is_made_from_the_submitted_clips(tmp_path, capsys):
    from clonebench.demo.suite_dataset import build_suite_standin
    from tests.tiny_models import write_tiny_utmos

    folder = build_suite_standin("core-v1", tmp_path / "core", ["compression-narrowband"], every=12)
    data = tmp_path / "core" / "dataset"
    prompts = tmp_path / "prompts"
    assert cli(["prompts", "--suite", str(folder), "--tasks", "compression-narrowband", "--data-root", str(data),
                "--output", str(prompts)]) == 0
    assert {e["task"] for e in _entries(prompts)} == {"audioshift"}  # a derived task has no prompts
    gen = _generate(prompts, tmp_path / "model")
    sha = write_tiny_utmos(tmp_path / "utmos")
    code = cli(["score", "--suite", str(folder), "--tasks", "compression-narrowband", "--data-root", str(data),
                "--generated", str(gen), "--output", str(tmp_path / "scores"), *DEMO,
                f"evaluation.utmos.local_dir={tmp_path / 'utmos'}", f"evaluation.utmos.sha256={sha}",
                "evaluation.utmos.allow_hub=false"])
    assert code == 0, capsys.readouterr()
    run = tmp_path / "scores"
    submission = json.loads((run / "submission.json").read_text())
    assert submission["status"] == "complete" and list(submission["tasks"]) == ["audioshift", "compression-narrowband"]
    derived = submission["tasks"]["compression-narrowband"]
    assert derived["derived_from"] == "audioshift" and set(derived["means"]) == {"stoi", "mcd", "sim", "wer"}
    scoring = json.loads((run / "tasks" / "compression-narrowband" / "scoring_manifest.json").read_text())
    assert scoring["derived_task"]["derived_from"] == "audioshift"
    assert len(list((run / "tasks" / "compression-narrowband" / "generated_audio").rglob("*.wav"))) == 2
    _assert_derived_provenance(run, "compression-narrowband", "audioshift", submission)


def _assert_derived_provenance(run, name: str, source: str, submission: dict) -> None:
    """A derived task records the processed clip it scored, everywhere a hash is recorded: its per-sample CSV and
    its own run manifest (with the transform and each sample's source clip), its scoring manifest's source run
    (the derived run itself, naming the source run) and submission.json; never the source clip's hash."""
    import csv

    from clonebench.core.hashing import sha256_file

    task, source_dir = run / "tasks" / name, run / "tasks" / source
    with open(task / "generation_sample_metrics.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    with open(source_dir / "generation_sample_metrics.csv", newline="") as handle:
        source_sha = {r["pair_id"]: r["generated_sha256"] for r in csv.DictReader(handle)}
    manifest = json.loads((task / "run_manifest.json").read_text())
    recorded = {s["pair_id"]: s for s in manifest["samples"]}
    processed = {}
    assert rows and len(rows) == len(recorded)
    for row in rows:
        path = task / row["generated_audio"]  # recorded relative to the task's run
        assert path.is_file() and path.resolve().is_relative_to((task / "generated_audio").resolve())
        processed[row["pair_id"]] = sha256_file(path)
        assert row["generated_sha256"] == processed[row["pair_id"]] != source_sha[row["pair_id"]]
        assert row["target_sha256"] == source_sha[row["pair_id"]]  # scored against the unprocessed clone
        sample = recorded[row["pair_id"]]
        assert sample["status"] == "generated" and sample["audio_sha256"] == processed[row["pair_id"]]
        assert sample["target_sha256"] == source_sha[row["pair_id"]] and sample["sample_rate"] == 24000
        assert sample["frames"] > 0 and sample["audio_bytes"] == path.stat().st_size
        source_clip = manifest["generation_provenance"]["sources"][sample["sample_id"]]
        assert source_clip["sha256"] == source_sha[row["pair_id"]]
    assert manifest["status"] == "generated" and manifest["derived_from"]["task"] == source
    assert Path(manifest["derived_from"]["run_dir"]).resolve() == source_dir.resolve()
    assert manifest["generation_provenance"]["transform"]["transform"]["kind"] == "narrowband"
    assert manifest["generation_provenance"]["transform"]["ffmpeg"]["ffmpeg"].startswith("ffmpeg version")
    assert len(manifest["generation_provenance"]["transform"]["commands"]) == 2
    scoring = json.loads((task / "scoring_manifest.json").read_text())
    assert scoring["source_run"]["run_dir"] == "."  # the derived run itself
    assert scoring["source_run"]["run_manifest_sha256"] == sha256_file(task / "run_manifest.json")
    assert Path(scoring["source_run"]["derived_from"]["run_dir"]).resolve() == source_dir.resolve()
    entry = submission["tasks"][name]
    assert entry["generated_sha256"] == processed
    assert entry["run_manifest"] == f"tasks/{name}/run_manifest.json"
    assert entry["run_manifest_sha256"] == sha256_file(task / "run_manifest.json")
    assert submission["tasks"][source]["generated_sha256"] == source_sha
