"""A run that travels: moved, copied (original deleted), copied preserving times as rsync -a does (original kept
but changed), and one in the layout of an older clonebench (absolute paths) copied away from its original: report
(audio present, --copy-audio copies the copy's clips), compare, status, listening-test and repeat work on the copy,
read only the copy's files, and never change the original."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from clonebench.cli.main import main as cli
from clonebench.core.hashing import sha256_file
from clonebench.runs.pipeline import run
from clonebench.standin import running_standin
from tests.conftest import compose

COMMON = ["adversary.reference_check=false", "evaluation.metrics=[sim]", "evaluation.ecapa.allow_hub=false",
          "adversary.retry_initial_delay=0.01", "adversary.max_samples=4"]
CSV = "generation_sample_metrics.csv"


@pytest.fixture(scope="module")
def made(tmp_path_factory, demo_dataset):
    """One scored run (4 pairs), its stand-in kept up for `repeat`."""
    tmp = tmp_path_factory.mktemp("travel")
    with running_standin(max_lifetime=900) as server:
        cfg = compose("demo", [f"paths.results_dir={tmp / 'results'}", f"dataset.manifest_filename={demo_dataset / 'metadata.json'}",
                               f"dataset.root_path={demo_dataset}", f"adversary.endpoint_url={server.url}/v1/tts", *COMMON])
        run(cfg, tmp / "results" / "made", "test")
        yield tmp / "results" / "made"


def _snapshot(folder):
    return {p.relative_to(folder): (sha256_file(p), p.stat().st_mtime_ns) for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ".clonebench.lock"}


def _old_layout(run_dir):
    """Rewrite a run as an older clonebench wrote it: absolute paths of the folder it was made in."""
    with open(run_dir / CSV, newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["generated_audio"] = str(run_dir / row["generated_audio"])
    with open(run_dir / CSV, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    (run_dir / "run_manifest.json").write_text(json.dumps({**manifest, "run_dir": str(run_dir)}))
    scoring = json.loads((run_dir / "scoring_manifest.json").read_text())
    scoring["source_run"].update(run_dir=str(run_dir), run_manifest_sha256=sha256_file(run_dir / "run_manifest.json"))
    (run_dir / "scoring_manifest.json").write_text(json.dumps(scoring))


def _relocate(how, original, destination):
    if how == "moved":
        os.rename(original, destination)
    elif how == "rsynced" and shutil.which("rsync"):
        subprocess.run(["rsync", "-a", f"{original}/", f"{destination}/"], check=True)
    else:  # copied; rsync -a where rsync is missing: a copy that keeps times, as rsync -a does
        shutil.copytree(original, destination, copy_function=shutil.copy2 if how == "rsynced" else shutil.copyfile)


def _generated(run_dir):
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    return {s["audio_sha256"]: run_dir / s["audio_path"] for s in manifest["samples"]}


@pytest.mark.parametrize("how,original_after", [("moved", "gone"), ("copied", "deleted"), ("rsynced", "changed"),
                                                ("old_layout", "changed")])
def test_a_relocated_run_works_with_every_subcommand_and_never_touches_the_original(made, tmp_path, capsys, how,
                                                                                  original_after):
    original = tmp_path / "original"
    shutil.copytree(made, original)
    if how == "old_layout":
        _old_layout(original)
    copy = tmp_path / "elsewhere" / "copy"
    copy.parent.mkdir()
    _relocate("copied" if how == "old_layout" else how, original, copy)
    if original_after == "deleted":
        shutil.rmtree(original)
    if original_after == "changed":  # every clip of the original differs now: the copy must show its own
        for wav in (original / "generated_audio").rglob("*.wav"):
            wav.write_bytes(wav.read_bytes()[:-100])
    before = _snapshot(original) if original.exists() else None
    generated = _generated(copy)

    report = tmp_path / "report"
    assert cli(["report", str(copy), "--format", "html", "--output", str(report), "--copy-audio"]) == 0
    page, printed = (report / "index.html").read_text(), capsys.readouterr()
    err = printed.err
    copied = {sha256_file(p) for p in (report / "audio").glob("*.wav")}
    assert f"audio: {len(copied)} clip(s) copied" in printed.out
    assert set(generated) <= copied and "not available" not in page and "missing" not in err
    assert ("older clonebench" in err) == (how == "old_layout")
    linked = tmp_path / "linked"
    assert cli(["report", str(copy), "--format", "html", "--output", str(linked)]) == 0
    for path in generated.values():  # linked from the copy, not from the original
        assert f'src="{os.path.relpath(path.resolve(), linked.resolve())}"' in (linked / "index.html").read_text()
    assert cli(["status", str(copy)]) == 0
    assert cli(["compare", f"A={copy}", f"B={copy}", "--format", "json"]) == 0
    listening = tmp_path / "listening"
    assert cli(["listening-test", str(copy), "--kind", "mos", "--items", "4", "--output", str(listening)]) == 0
    key = (listening / "key.json").read_text()
    assert str(original) not in key
    assert cli(["repeat", str(copy), "--count", "2"]) == 0
    assert (_snapshot(original) if original.exists() else None) == before  # nothing written to the original


def test_a_reader_names_the_recorded_files_that_are_missing(made, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(made, copy)
    gone = sorted((copy / "generated_audio").rglob("*.wav"))[:2]
    for wav in gone:
        wav.unlink()
    assert cli(["report", str(copy), "--format", "html", "--output", str(tmp_path / "report")]) == 0
    err = capsys.readouterr().err
    assert "2 of 4 recorded file(s) missing" in err and all(w.name in err for w in gone)
    assert (tmp_path / "report" / "index.html").read_text().count("not available") == 2


def test_a_moved_score_output_resumes_with_every_score_reused(made, tmp_path, capsys):
    """`clonebench score --resume` on a score output that was moved: nothing re-scored, the rows unchanged."""
    from clonebench.core.atomic import atomic_write_json
    from clonebench.standin.batch import run_batch

    dataset = json.loads((made / "run_manifest.json").read_text())["config"]["dataset"]
    pairs = {s["pair_id"] for s in json.loads((made / "run_manifest.json").read_text())["samples"]}
    rows = [r for r in json.loads(Path(dataset["manifest_filename"]).read_text())["pairs"] if r["pair_id"] in pairs]
    atomic_write_json(tmp_path / "four.json", {"pairs": rows})  # the made run's pairs: their targets are cached
    common = ["--manifest", str(tmp_path / "four.json"), "--root", dataset["root_path"]]
    assert cli(["prompts", *common, "--output", str(tmp_path / "prompts")]) == 0
    run_batch(tmp_path / "prompts" / "prompts.tsv", tmp_path / "wavs", 1)
    scoring = ["--config-name", "demo", "evaluation.metrics=[sim]", "evaluation.ecapa.allow_hub=false",
               f"evaluation.cache_dir={made.parent / '.cache' / 'metric_cache'}"]
    first = tmp_path / "scores"
    assert cli(["score", *common, "--generated", str(tmp_path / "wavs"), "--output", str(first), *scoring]) == 0
    task = next(p.name for p in first.iterdir() if (p / CSV).is_file())
    before = (first / task / CSV).read_text()
    moved = tmp_path / "moved" / "scores"
    moved.parent.mkdir()
    os.rename(first, moved)
    capsys.readouterr()
    assert cli(["score", *common, "--generated", str(tmp_path / "wavs"), "--output", str(moved), *scoring,
                "--resume"]) == 0, capsys.readouterr().err
    assert json.loads((moved / task / "scoring_manifest.json").read_text())["cache"]["misses"] == 0
    assert (moved / task / CSV).read_text() == before and not first.exists()


def test_a_resume_chain_moved_together_still_resumes_sending_nothing(tmp_path, demo_dataset, standin):
    """Runs A and B (B resumed A) rsynced elsewhere together: resuming from the moved B reaches the moved A."""
    from clonebench.core.records import RunStatus
    from tests.conftest import generate_run

    gate = "adversary.reference_check=false"
    made = tmp_path / "cluster" / "results"
    generate_run(tmp_path, demo_dataset, standin.url, gate, "adversary.max_samples=4", run_dir=made / "a")
    generate_run(tmp_path, demo_dataset, standin.url, gate, "adversary.max_samples=4", f"vc.resume_from={made / 'a'}",
                 run_dir=made / "b")
    assert json.loads((made / "b" / "run_manifest.json").read_text())["resumed_from"]["reused"] == 4
    laptop = tmp_path / "laptop" / "results"
    laptop.parent.mkdir()
    os.rename(made, laptop)
    tts = lambda: [r for r in standin.received if r["path"] == "/v1/tts"]  # noqa: E731
    sent = len(tts())
    status, resumed = generate_run(tmp_path, demo_dataset, standin.url, gate, "adversary.max_samples=4",
                                   f"vc.resume_from={laptop / 'b'}", run_dir=laptop / "c")
    assert status == RunStatus.GENERATED and len(tts()) == sent  # nothing sent again
    manifest = json.loads((resumed / "run_manifest.json").read_text())
    assert manifest["resumed_from"]["chain"] == [str(laptop / "b"), str(laptop / "a")]


def test_a_copy_without_its_dataset_says_so(made, tmp_path, capsys):
    """The dataset (outside the run) is gone on the machine the run was copied to: the report names it."""
    copy = tmp_path / "copy"
    shutil.copytree(made, copy)
    for name in ("run_manifest.json", "scoring_manifest.json"):
        record = json.loads((copy / name).read_text())
        record["config"]["dataset"]["root_path"] = str(tmp_path / "no-such-data")
        (copy / name).write_text(json.dumps(record))
    with open(copy / CSV, newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["target_audio"] = str(tmp_path / "no-such-data" / Path(row["target_audio"]).name)
    with open(copy / CSV, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert cli(["report", str(copy), "--format", "html", "--output", str(tmp_path / "report")]) == 0
    err = capsys.readouterr().err
    assert "4 of 4 target clip(s) missing" in err and str(tmp_path / "no-such-data") in err
    assert "the dataset folder" in err and "recorded file(s) missing" not in err  # the run's own clips are there
