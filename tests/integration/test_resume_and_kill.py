"""Kill a run with SIGKILL at several points, resume it: nothing lost, duplicated or corrupt, nothing re-sent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clonebench.core.errors import ResumeError
from clonebench.core.hashing import sha256_file
from clonebench.core.records import RunStatus
from clonebench.data.audio import validate_wav
from clonebench.standin import running_standin
from tests.conftest import REPO, generate_run, journal, load_manifest

NO_GATE = "adversary.reference_check=false"


def _events(run_dir: Path) -> list[dict]:
    path = run_dir / "sample_events.jsonl"
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")[:-1]
    return [json.loads(x) for x in lines]


def _start(tmp_path: Path, data: Path, url: str) -> tuple[subprocess.Popen, Path]:
    results = tmp_path / "results"
    process = subprocess.Popen(
        [sys.executable, str(REPO / "run_vc.py"), "--config-name", "demo", f"paths.results_dir={results}",
         f"dataset.manifest_filename={data / 'metadata.json'}", f"dataset.root_path={data}",
         f"adversary.endpoint_url={url}/v1/tts", "+vc.generate_only=true", NO_GATE],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return process, results / "demo"


def _wait_for(process, run_root: Path, predicate, timeout=90.0) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = sorted(run_root.glob("*-*")) if run_root.exists() else []
        if runs and predicate(_events(runs[-1])):
            return runs[-1]
        assert process.poll() is None, "the run finished before the kill point"
        time.sleep(0.01)
    process.kill()
    raise AssertionError("kill point never reached")


def _generated(events):
    return sum(1 for e in events if e["event"] == "sample" and e["status"] == "generated")


def _in_flight(events) -> bool:
    """A request is on the wire: more attempt starts than ends (audio is saved while the next one is sent)."""
    return sum(e["event"] == "attempt_start" for e in events) > sum(e["event"] == "attempt_end" for e in events)


KILL_POINTS = {
    "before_any_sample": lambda ev: any(e["event"] == "run_start" for e in ev) and _generated(ev) == 0,
    "mid_attempt": lambda ev: _generated(ev) >= 2 and _in_flight(ev),
    "after_five": lambda ev: _generated(ev) >= 5,
}


@pytest.mark.parametrize("point", sorted(KILL_POINTS))
def test_sigkill_then_resume(tmp_path, dataset, point):
    with running_standin(latency=0.25, max_lifetime=300) as server:
        process, run_root = _start(tmp_path, dataset, server.url)
        killed_dir = _wait_for(process, run_root, KILL_POINTS[point])
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        finished_before = {e["sample_id"]: e for e in _events(killed_dir)
                           if e["event"] == "sample" and e["status"] == "generated"}
        requests_before = len([r for r in server.received if r["path"] == "/v1/tts"])

        status, resumed = generate_run(tmp_path, dataset, server.url, NO_GATE, f"vc.resume_from={killed_dir}",
                                       run_dir=tmp_path / "results" / "resumed")
        sent_on_resume = len([r for r in server.received if r["path"] == "/v1/tts"]) - requests_before

    assert status == RunStatus.GENERATED
    manifest = load_manifest(resumed)
    assert manifest["resumed_from"]["reused"] == len(finished_before)
    assert sent_on_resume == 8 - len(finished_before)  # no request for finished samples
    resumed_attempts = {e["sample_id"] for e in journal(resumed) if e["event"] == "attempt_start"}
    assert not resumed_attempts & set(finished_before)
    files = sorted((resumed / "generated_audio").rglob("*.wav"))
    assert len(files) == 8 and not list((resumed / "generated_audio").rglob(".*"))  # no temp files left
    for sample in manifest["samples"]:
        assert sample["status"] == "generated"
        path = resumed / sample["audio_path"]
        assert sha256_file(path) == sample["audio_sha256"]
        validate_wav(path.read_bytes())
        if sample["sample_id"] in finished_before:
            assert sample["audio_sha256"] == finished_before[sample["sample_id"]]["audio_sha256"]
            assert sample["reused_from"] == str(killed_dir)
    # the killed run tells the truth about itself
    from clonebench.runs.status import summarise
    summary = summarise(killed_dir)
    assert summary["status"].startswith("interrupted") and summary["generated"] == len(finished_before)


def test_torn_journal_is_recovered_and_tampered_audio_regenerated(tmp_path, dataset, standin):
    status, first = generate_run(tmp_path, dataset, standin.url, NO_GATE, run_dir=tmp_path / "results" / "first")
    assert status == RunStatus.GENERATED
    samples = load_manifest(first)["samples"]
    # a crash between writing the last WAV and journaling it: cut the journal inside the last sample event
    data = (first / "sample_events.jsonl").read_bytes()
    lines = data.split(b"\n")
    last_sample = max(i for i, raw in enumerate(lines) if raw and json.loads(raw)["event"] == "sample")
    torn = b"\n".join(lines[:last_sample]) + b"\n" + lines[last_sample][:20]
    (first / "sample_events.jsonl").write_bytes(torn)
    torn_id = json.loads(lines[last_sample])["sample_id"]
    # and someone edited another WAV in place
    tampered = samples[0]
    with open(first / tampered["audio_path"], "r+b") as handle:
        handle.seek(200)
        handle.write(b"\x01\x02\x03\x04")
    standin.received.clear()
    status, second = generate_run(tmp_path, dataset, standin.url, NO_GATE, f"vc.resume_from={first}",
                                  run_dir=tmp_path / "results" / "second")
    assert status == RunStatus.GENERATED
    regenerated = {e["sample_id"] for e in journal(second) if e["event"] == "attempt_start"}
    # the torn sample's WAV is the journaled body of its successful attempt: recovered, not sent again
    assert regenerated == {tampered["sample_id"]}
    assert len([r for r in standin.received if r["path"] == "/v1/tts"]) == 1
    recovered = next(r for r in load_manifest(second)["samples"] if r["sample_id"] == torn_id)
    assert recovered["reused_from"] == str(first) and sha256_file(second / recovered["audio_path"]) == \
        next(r for r in samples if r["sample_id"] == torn_id)["audio_sha256"]
    # a resumed run can itself be resumed: nothing left to send
    standin.received.clear()
    status, third = generate_run(tmp_path, dataset, standin.url, NO_GATE, f"vc.resume_from={second}",
                                 run_dir=tmp_path / "results" / "third")
    assert status == RunStatus.GENERATED and standin.received == []
    assert load_manifest(third)["resumed_from"]["reused"] == 8


@pytest.mark.parametrize("override, message", [
    ("+seed=7", r"generation fingerprint differs; changed: \['seed: 42 -> 7'"),
    ("adversary.temperature=0.5", r"generation fingerprint differs; changed: \[\"effective_sampling: .*'temperature': "
                                  r"0\.5.*'temperature: 0.8 -> 0.5'\]"),
    ("adversary.max_samples=3", "input fingerprint differs"),
])
def test_resume_refuses_different_inputs_or_settings(tmp_path, dataset, standin, override, message):
    status, first = generate_run(tmp_path, dataset, standin.url, NO_GATE, run_dir=tmp_path / "results" / "first")
    standin.received.clear()
    with pytest.raises(ResumeError, match=message):
        generate_run(tmp_path, dataset, standin.url, NO_GATE, override, f"vc.resume_from={first}",
                     run_dir=tmp_path / "results" / "second")
    assert [r for r in standin.received if r["path"] == "/v1/tts"] == []


def test_resume_from_a_non_run_dir_is_refused(tmp_path, dataset, standin):
    with pytest.raises(ResumeError, match="no sample_events.jsonl there"):
        generate_run(tmp_path, dataset, standin.url, f"vc.resume_from={tmp_path}")


def test_status_command_reports_coverage_and_errors(tmp_path, dataset, standin):
    standin.faults.add([{"kind": "status", "code": 400, "message": "bad things"}])
    status, run_dir = generate_run(tmp_path, dataset, standin.url, NO_GATE)
    result = subprocess.run([sys.executable, "-m", "clonebench.cli.main", "status", str(run_dir)],
                            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert result.returncode == 0, result.stderr
    assert "status   partial" in result.stdout
    assert "coverage 7/8 generated (87.5%), 8 attempts" in result.stdout
    assert "HTTP400" in result.stdout and "bad things" in result.stdout
