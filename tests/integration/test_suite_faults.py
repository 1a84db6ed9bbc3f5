"""Suite runs under faults: a suite run (generate, then evaluate) killed with SIGKILL at several points, each kill
resumed from the newest suite run of the chain (``vc.resume_from=<suite dir>``) until one finishes, ends with the
same results as an uninterrupted run of the same suite: every per-utterance value and sha256, every per-task mean
and interval, the submission's task records; each pair has exactly one clip, no pair got two successful requests
across the chain, and every journal of the chain reads back (a line torn by a kill is never taken as a record).
A damaged record of a task in the run resumed from is one clear error (exit 2, no traceback) naming the task's
file and the fix.

The suite is onboarding-v1's libritts and vctk tasks on the eSpeak NG stand-in data (every 4th pair: 4 + 4 pairs),
scored with mcd and stoi only (no Whisper, no ECAPA), against the stand-in server on loopback with 0.4 s latency
so each kill point (found by polling the run's files, not by timing) is reached with time to spare."""

from __future__ import annotations

import csv
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from clonebench.core.hashing import sha256_file
from clonebench.generate.journal import read_events
from clonebench.standin import running_standin
from tests.conftest import REPO

TASKS = ("libritts", "vctk")
SEED = 20260528  # the jitter after each kill point
PER_ROW = ("sample_id", "pair_id", "speaker_id", "generation_status", "generated_sha256", "target_sha256",
           "target_text", "language", "mcd", "stoi", "generated_duration_s", "target_duration_s", "errors")
SUBMITTED = ("status", "required_metrics", "coverage", "evaluation_fingerprint", "failures", "generated_sha256",
             "means")


@pytest.fixture(scope="module")
def small_suite(tmp_path_factory):
    """onboarding-v1 cut to libritts and vctk, every 4th pair, metrics mcd and stoi (the suite's own protocol)."""
    from clonebench.demo.suite_dataset import build_suite_standin

    root = tmp_path_factory.mktemp("suite_faults")
    folder = build_suite_standin("onboarding-v1", root, list(TASKS), every=4)
    raw = json.loads((folder / "suite.json").read_text())
    raw["evaluation"]["required_metrics"] = ["mcd", "stoi"]
    raw["tasks"] = [t for t in raw["tasks"] if t["task"] in TASKS]
    (folder / "suite.json").write_text(json.dumps(raw, indent=1))
    return folder, root / "dataset"


@pytest.fixture(scope="module")
def server():
    with running_standin(latency=0.4, max_lifetime=900) as running:
        yield running


def _settings(folder: Path, data: Path) -> list[str]:
    return [f"suite.name={folder}", f"dataset.root_path={data}", "suite.model=stand-in"]


@pytest.fixture(scope="module")
def reference(small_suite, server, tmp_path_factory):
    """The uninterrupted run, a fresh process as every run of the chain: an in-process run would inherit what
    earlier tests left in the test process (torch's thread count, which STOI's last bits follow)."""
    folder, data = small_suite
    tmp = tmp_path_factory.mktemp("reference")
    suite_dir = tmp / "results" / "uninterrupted"
    done = subprocess.run(_command(folder, data, server.url, tmp / "results", suite_dir, None), cwd=tmp, env=_env(),
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads((suite_dir / "suite_manifest.json").read_text())["status"] == "complete"
    return suite_dir


def _command(folder: Path, data: Path, url: str, results: Path, run_dir: Path, origin: Path | None) -> list[str]:
    return [sys.executable, str(REPO / "run_vc.py"), "--config-name", "suite/onboarding_v1",
            f"paths.results_dir={results}", f"adversary.endpoint_url={url}/v1/tts",
            "adversary.retry_initial_delay=0.01", "adversary.retry_max_delay=0.2", "adversary.ready_timeout=30",
            *_settings(folder, data), f"hydra.run.dir={run_dir}",
            *([f"vc.resume_from={origin}"] if origin is not None else [])]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}


def _events(path: Path) -> list[dict]:
    return list(read_events(path)) if path.is_file() else []


def _samples(run_dir: Path, task: str) -> int:
    return sum(e["event"] == "sample" and e["status"] == "generated"
               for e in _events(run_dir / "tasks" / task / "sample_events.jsonl"))


def _in_flight(run_dir: Path, task: str) -> bool:
    events = _events(run_dir / "tasks" / task / "sample_events.jsonl")
    return sum(e["event"] == "attempt_start" for e in events) > sum(e["event"] == "attempt_end" for e in events)


def _cached(run_dir: Path, metric: str) -> int:
    return sum(1 for task in TASKS for _ in (run_dir / "tasks" / task / "metric_cache" / metric).rglob("*.json"))


# In chain order: each is reached by the run that resumes the previous kill (generation first, then scoring).
KILL_POINTS = [
    ("gate, before any sample", lambda d: (d / "tasks/libritts/run_manifest.json").is_file()
     and _samples(d, "libritts") == 0),
    ("mid first task, request on the wire", lambda d: _samples(d, "libritts") >= 2 and _in_flight(d, "libritts")),
    ("mid second task", lambda d: _samples(d, "vctk") >= 1 and _in_flight(d, "vctk")),
    ("scoring started", lambda d: any((d / "tasks" / t / "scoring_progress.json").is_file() for t in TASKS)),
    ("mid scoring, first metric cached", lambda d: _cached(d, "stoi") + _cached(d, "mcd") >= 1),
]


def _run_until(process: subprocess.Popen, run_dir: Path, point, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if run_dir.is_dir() and point(run_dir):
                return
        except json.JSONDecodeError:
            pass  # a journal line being written: look again
        if process.poll() is not None:
            raise AssertionError(f"the run ended (exit {process.returncode}) before the kill point: "
                                 f"{process.stderr.read().decode()[-3000:]}")
        time.sleep(0.005)
    process.kill()
    raise AssertionError("kill point never reached")


def _rows(task_dir: Path) -> list[dict]:
    with open(task_dir / "generation_sample_metrics.csv", newline="") as handle:
        return [{k: row[k] for k in PER_ROW} for row in csv.DictReader(handle)]


def _clips(task_dir: Path) -> dict[str, str]:
    """Every file under generated_audio (temporary files included): relative path -> sha256."""
    audio = task_dir / "generated_audio"
    return {str(p.relative_to(audio)): sha256_file(p) for p in audio.rglob("*") if p.is_file()}


def _journal_lines(path: Path) -> tuple[int, bytes]:
    """Complete lines of a journal and whatever a kill left after the last newline."""
    data = path.read_bytes() if path.is_file() else b""
    lines = data.split(b"\n")
    for raw in lines[:-1]:
        json.loads(raw)  # every complete line is a whole event
    return len(lines) - 1, lines[-1]


def _tear(journal: Path) -> None:
    events = _events(journal)
    ended = {e["sample_id"] for e in events if e["event"] == "attempt_end"}
    pending = [e["sample_id"] for e in events if e["event"] == "attempt_start" and e["sample_id"] not in ended]
    assert pending, "no request in flight at the kill"
    whole = json.dumps({"event": "sample", "sample_id": pending[0], "status": "generated",
                        "audio_path": "generated_audio/x.wav"})
    with open(journal, "ab") as handle:
        handle.write(whole[: len(whole) - 5].encode())


@pytest.fixture(scope="module")
def chain(small_suite, server, tmp_path_factory):
    """The suite run killed at each KILL_POINTS in turn, each resumed from the newest run, the last run to the end."""
    folder, data = small_suite
    tmp = tmp_path_factory.mktemp("chain")
    results = tmp / "results"
    rng = random.Random(SEED)
    runs: list[Path] = []
    for index, (name, point) in enumerate(KILL_POINTS):
        run_dir = results / f"run{index}"
        process = subprocess.Popen(_command(folder, data, server.url, results, run_dir, runs[-1] if runs else None),
                                   cwd=tmp, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _run_until(process, run_dir, point)
            time.sleep(rng.uniform(0.0, 0.03))
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert process.returncode == -signal.SIGKILL, f"{name}: the run ended before the kill " \
                                                      f"({process.stderr.read().decode()[-2000:]})"
        process.stderr.close()
        if name == "mid second task":  # as if the kill had cut the journal inside the in-flight pair's sample event
            _tear(run_dir / "tasks" / "vctk" / "sample_events.jsonl")
        runs.append(run_dir)
    final = results / "final"
    done = subprocess.run(_command(folder, data, server.url, results, final, runs[-1]), cwd=tmp, env=_env(),
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return {"runs": runs, "final": final, "folder": folder, "data": data, "tmp": tmp}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_killed_and_resumed_suite_equals_an_uninterrupted_one(reference, chain):
    final = chain["final"]
    manifest = json.loads((final / "suite_manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["resume_origin"] == str(chain["runs"][-1])
    for task in TASKS:
        ours, theirs = final / "tasks" / task, reference / "tasks" / task
        # every per-utterance value, exactly
        assert _rows(ours) == _rows(theirs)
        # every per-task mean and interval, and the task's record in the summaries
        assert json.loads((ours / "metrics.json").read_text())["metrics"] == \
            json.loads((theirs / "metrics.json").read_text())["metrics"]
        # one clip per pair, the same bytes, nothing else (no temporary or duplicated files)
        samples = json.loads((ours / "run_manifest.json").read_text())["samples"]
        expected = {s["sample_id"]: s for s in json.loads((theirs / "run_manifest.json").read_text())["samples"]}
        assert {s["sample_id"] for s in samples} == set(expected) and len(samples) == len(expected) == 4
        clips = _clips(ours)
        assert sorted(clips) == sorted(s["audio_path"].removeprefix("generated_audio/") for s in samples)
        for sample in samples:
            assert sample["status"] == "generated"
            assert sample["audio_sha256"] == expected[sample["sample_id"]]["audio_sha256"]
            assert clips[sample["audio_path"].removeprefix("generated_audio/")] == sample["audio_sha256"]
        assert _clips(theirs).values() and sorted(_clips(theirs).values()) == sorted(clips.values())
    ours = json.loads((final / "suite_results.json").read_text())
    theirs = json.loads((reference / "suite_results.json").read_text())
    assert ours["status"] == theirs["status"] == "complete"
    for mine, other in zip(ours["tasks"], theirs["tasks"], strict=True):
        assert (mine["task"], mine["metrics"], mine["coverage"]) == (other["task"], other["metrics"], other["coverage"])
    ours = json.loads((final / "submission.json").read_text())["tasks"]
    theirs = json.loads((reference / "submission.json").read_text())["tasks"]
    assert set(ours) == set(theirs) == set(TASKS)
    for task in TASKS:
        assert {k: ours[task][k] for k in SUBMITTED} == {k: theirs[task][k] for k in SUBMITTED}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_no_pair_is_lost_or_generated_twice_across_the_chain(reference, chain):
    runs = [*chain["runs"], chain["final"]]
    torn_seen = 0
    for task in TASKS:
        reference_attempts = Counter(e["sample_id"] for e in _events(reference / "tasks" / task / "sample_events.jsonl")
                                     if e["event"] == "attempt_end" and e.get("purpose", "sample") == "sample")
        assert set(reference_attempts.values()) == {1}
        ok = Counter()       # successful requests of each pair across the chain
        finished: set[str] = set()
        for run_dir in runs:
            journal = run_dir / "tasks" / task / "sample_events.jsonl"
            complete, torn = _journal_lines(journal)
            events = _events(journal)
            assert len(events) == complete  # a torn last line is never taken as a record
            torn_seen += bool(torn)
            sent = {e["sample_id"] for e in events if e["event"] == "attempt_start"
                    and e.get("purpose", "sample") == "sample"}
            assert not sent & finished, f"{run_dir.name}/{task}: sent again after a run of the chain finished it"
            ok.update(e["sample_id"] for e in events if e["event"] == "attempt_end" and e.get("outcome") == "ok"
                      and e.get("purpose", "sample") == "sample")
            finished |= {e["sample_id"] for e in events if e["event"] == "sample" and e["status"] == "generated"}
        assert ok == reference_attempts, f"{task}: successful requests per pair across the chain"
        final = json.loads((chain["final"] / "tasks" / task / "run_manifest.json").read_text())
        assert final["status"] == "generated" and final["counts"] == {"generated": 4}
    # every killed run tells the truth about itself
    for run_dir in chain["runs"]:
        record = json.loads((run_dir / "suite_manifest.json").read_text())
        assert record["status"] == "running"  # killed: never recorded as finished
    assert torn_seen >= 1  # at least the one cut inside a sample event (_tear)


def _resume(chain, url: str, origin: Path, run_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(_command(chain["folder"], chain["data"], url, chain["tmp"] / "results",
                                   run_dir, origin), cwd=chain["tmp"], env=_env(), capture_output=True, text=True,
                          timeout=300, check=False)


def _copy_run(source: Path, target: Path) -> Path:
    import shutil

    shutil.copytree(source, target, symlinks=True)
    return target


FIX = r"(resume from another (suite )?run of the chain|restore it|start a new run)"
DAMAGES = {  # the file damaged (in a copy of the run killed in its second task) and how
    # the task run's manifest, cut short (another program, a full disk): the resume reads its resume origin there
    "task manifest": ("tasks/vctk/run_manifest.json", lambda b: b[: len(b) // 2]),
    # the task's journal damaged before its last line (not a kill's torn tail)
    "task journal": ("tasks/vctk/sample_events.jsonl", lambda b: b.replace(b"\n", b"\n{\"event\": \x00\n", 1)),
    # the suite's record of its tasks, cut short
    "suite record": ("suite_manifest.json", lambda b: b[: len(b) // 2]),
}


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_task_record_is_a_clear_error(chain, server, tmp_path, damage):
    import re

    name, change = DAMAGES[damage]
    origin = _copy_run(chain["runs"][2], tmp_path / "origin")  # killed in its second task: vctk has a journal
    # the copy resumes the same chain (its origin is the run before it)
    path = origin / name
    path.write_bytes(change(path.read_bytes()))
    done = _resume(chain, server.url, origin, tmp_path / "resumed")
    assert done.returncode == 2, (done.returncode, done.stderr[-3000:])
    assert "Traceback" not in done.stderr and "unexpected error" not in done.stderr, done.stderr[-3000:]
    error = next(line for line in done.stderr.splitlines() if line.startswith("clonebench: error:"))
    print(error)
    assert str(origin / name) in error, error  # the file, so the task, that is damaged
    assert re.search(FIX, error), error
