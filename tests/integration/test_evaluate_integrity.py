"""The evaluate phase against what a user's machine does to it, with whole ``run_vc.py`` processes as a user runs
them: a shared metric cache damaged on disk, two evaluations sharing one cache at once, and SIGKILL at random
(seeded) moments while scoring. Asserted: no crash, every final value equal to an uninterrupted run's, and a killed
run readable (``clonebench status`` shows how far each scorer group got; ``clonebench report`` refuses it)."""

from __future__ import annotations

import csv
import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clonebench.standin import running_standin
from tests.conftest import REPO, generate_run

pytestmark = pytest.mark.slow
METRICS = "evaluation.metrics=[wer,mcd]"
PAIRS = "adversary.max_samples=4"
SEED = 20261201
KILLS = 3  # seeded kill attempts
LANDED = 2  # kills that must land while scoring (more attempts where too few did)


@pytest.fixture(scope="module")
def generated(tmp_path_factory, demo_dataset):
    """One generation run of 4 demo pairs against the stand-in."""
    tmp = tmp_path_factory.mktemp("integrity")
    with running_standin(max_lifetime=600) as server:
        status, run_dir = generate_run(tmp, demo_dataset, server.url, "adversary.reference_check=false", PAIRS)
    assert status.value == "generated"
    return tmp, demo_dataset, run_dir


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}


def _evaluate(generated, name: str, cache: Path, *extra: str, wait: bool = True):
    tmp, data, source = generated
    run_dir = tmp / "results" / name
    command = [sys.executable, str(REPO / "run_vc.py"), "--config-name", "demo", f"paths.results_dir={tmp / 'results'}",
               f"dataset.manifest_filename={data / 'metadata.json'}", f"dataset.root_path={data}",
               "+vc.evaluate_only=true", f"+vc.evaluation.generated_audio_dir={source / 'generated_audio'}", METRICS,
               PAIRS, "evaluation.whisper.model=tiny.en", "evaluation.batch_size=1", f"evaluation.cache_dir={cache}",
               f"hydra.run.dir={run_dir}", *extra]
    process = subprocess.Popen(command, cwd=tmp, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if not wait:
        return process, run_dir
    out, err = process.communicate(timeout=900)
    return process.returncode, out, err, run_dir


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clonebench.cli.main", *map(str, args)], capture_output=True,
                          text=True, env=_env(), timeout=120)


def _values(run_dir: Path) -> tuple[dict, list[dict]]:
    metrics = json.loads((run_dir / "metrics.json").read_text())
    rows = list(csv.DictReader(open(run_dir / "generation_sample_metrics.csv", encoding="utf-8")))
    keep = ("sample_id", "hypothesis", "wer", "wer_edits", "wer_ref_words", "mcd", "errors")
    return metrics["metrics"], [{k: r[k] for k in keep} for r in rows]


@pytest.fixture(scope="module")
def reference(generated):
    """An uninterrupted evaluation from an empty cache: the values every other run must equal."""
    tmp = generated[0]
    code, out, err, run_dir = _evaluate(generated, "reference", tmp / "reference_cache")
    assert code == 0, err[-3000:]
    return _values(run_dir)


def test_damaged_shared_records_are_rescored_and_rewritten_not_a_crash(generated, reference):
    tmp = generated[0]
    cache = tmp / "reference_cache"  # what the reference run left: damaged in five ways
    whisper = sorted((cache / "whisper").rglob("*.json"))
    mcd = sorted((cache / "mcd").rglob("*.json"))
    assert len(whisper) == 4 and len(mcd) == 4
    for path, damage in zip(whisper, ["drop wer_edits", "wer as text", "not an object"]):
        payload = json.loads(path.read_text())
        if damage == "drop wer_edits":
            payload["values"].pop("wer_edits")
        elif damage == "wer as text":
            payload["values"]["wer"] = str(payload["values"]["wer"])
        path.write_text("[]" if damage == "not an object" else json.dumps(payload))
    mcd[0].write_bytes(b"\xff\xfe\x00garbage")
    mcd[1].unlink()
    mcd[1].mkdir()  # a directory where a record should be: a miss, and it cannot be rewritten
    code, out, err, run_dir = _evaluate(generated, "after_damage", cache)
    assert code == 0, err[-3000:]
    assert _values(run_dir) == reference
    log = (run_dir / "run_vc.log").read_text()
    lines = [line for line in log.splitlines() if "metric cache" in line]
    assert len([x for x in lines if "whisper: 3 record(s) not trusted" in x]) == 1, lines
    assert len([x for x in lines if "mcd: 2 record(s) not trusted" in x]) == 1, lines
    assert len([x for x in lines if "mcd: 1 record(s) could not be cached" in x]) == 1, lines
    assert len(lines) == 3, lines
    manifest = json.loads((run_dir / "scoring_manifest.json").read_text())
    assert manifest["scorers"]["whisper"]["scored"] == 3 and manifest["scorers"]["whisper"]["cached"] == 1
    assert sum(manifest["cache"]["not_trusted"]["whisper"].values()) == 3
    assert all(json.loads(p.read_text())["values"].get("wer_edits") is not None for p in whisper)  # rewritten


def test_two_evaluations_sharing_one_cache_at_once_both_complete_with_equal_values(generated, reference):
    tmp = generated[0]
    cache = tmp / "concurrent_cache"
    first = _evaluate(generated, "concurrent_a", cache, wait=False)
    second = _evaluate(generated, "concurrent_b", cache, wait=False)
    for process, run_dir in (first, second):
        _, err = process.communicate(timeout=900)
        assert process.returncode == 0, err[-3000:]
        assert _values(run_dir) == reference
    assert not [p for p in cache.rglob("*") if p.name.endswith(".tmp")]  # no temporary file left behind
    assert len(list((cache / "whisper").rglob("*.json"))) == 4


def _processed(run_dir: Path) -> tuple[str | None, int]:
    """(state, items cached or scored over every group) from the run's progress file."""
    try:
        progress = json.loads((run_dir / "scoring_progress.json").read_text())
    except (OSError, ValueError):
        return None, 0
    return progress.get("state"), sum(g["cached"] + g["scored"] for g in progress["groups"].values())


def _kill_at(process, run_dir: Path, target: int, delay: float, timeout: float = 600.0) -> bool:
    """SIGKILL once the run has processed ``target`` items (then ``delay`` s more); False if it finished first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state, processed = _processed(run_dir)
        if state == "scoring" and processed >= target:
            time.sleep(delay)
            if process.poll() is not None:
                return False
            process.send_signal(signal.SIGKILL)
            process.communicate(timeout=60)
            return _processed(run_dir)[0] != "finished"
        if process.poll() is not None:
            return False
        time.sleep(0.01)
    raise AssertionError(f"{run_dir} never reached {target} processed items")


def test_sigkill_while_scoring_leaves_a_readable_run_and_a_rerun_equals_an_uninterrupted_one(generated, reference):
    """Kill points are seeded: after a random number of processed items (of 4 pairs x 2 groups) plus a random delay."""
    tmp = generated[0]
    cache = tmp / "killed_cache"
    rng = random.Random(SEED)
    landed = 0
    for kill in itertools.count():
        if kill >= KILLS and landed >= LANDED:
            break
        # the seeded kills; then, on a host fast enough that a run finished before its kill, kills at the first
        # item at once, until LANDED have landed (how fast the host scores is not what is tested)
        assert kill < KILLS + 6, f"only {landed} of {kill} kills landed while scoring"
        target, delay = (rng.randrange(1, 7), rng.uniform(0.0, 0.3)) if kill < KILLS else (1, 0.0)
        before = tmp / f"killed_cache_before{kill}"
        if cache.exists():
            shutil.copytree(cache, before)
        process, run_dir = _evaluate(generated, f"killed{kill}", cache, wait=False)
        if not _kill_at(process, run_dir, target, delay):
            # the run finished first: its records would leave the next kill nothing to interrupt; back to before
            shutil.rmtree(cache, ignore_errors=True)
            if before.exists():
                shutil.copytree(before, cache)
            continue
        landed += 1
        status = _cli("status", run_dir)
        assert status.returncode == 0, status.stderr
        assert "interrupted while scoring (the process died)" in status.stdout, status.stdout
        for group in ("whisper", "mcd"):
            assert f"  {group} " in status.stdout, status.stdout
        as_json = json.loads(_cli("status", run_dir, "--json").stdout)
        groups = as_json["scoring"]["groups"]
        assert set(groups) == {"whisper", "mcd"} and all(g["total"] == 4 for g in groups.values())
        assert {g["state"] for g in groups.values()} <= {"waiting", "running", "done"}  # which group was running
        for entry in groups.values():
            if entry["state"] in ("running", "done"):  # the cache holds at least what the progress file counted
                assert entry["records_in_run_cache"] >= entry["cached"] + entry["scored"], entry
        report = _cli("report", run_dir, "--format", "md")
        assert report.returncode == 2 and "interrupted while scoring" in report.stderr, report.stderr
        assert "whisper" in report.stderr and "mcd" in report.stderr, report.stderr
    code, out, err, final = _evaluate(generated, "after_kills", cache)
    assert code == 0, err[-3000:]
    assert _values(final) == reference
    status = _cli("status", final)
    assert status.returncode == 0 and "finished: complete" in status.stdout, status.stdout
    report = _cli("report", final, "--format", "md")
    assert report.returncode == 0, report.stderr
