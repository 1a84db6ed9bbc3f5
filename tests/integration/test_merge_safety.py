"""Merge exact and safe: a shard stopped by SIGTERM (what scancel, a time limit or preemption send) is refused naming
the shard, its unfinished pairs and the resume command; that command, run as printed, resumes the shard into the
sweep, and the merge then takes the resumed run in place of the one it resumed (a config differing only in
vc.resume_from) and equals a sweep that was never interrupted. A refusal leaves nothing behind; an older merge
stays until a complete one replaces it; a half-written ``merged/`` of an older clonebench does not block."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clonebench.core.errors import ClonebenchError
from clonebench.runs.merge import merge
from clonebench.standin import running_standin
from tests.conftest import REPO

NO_GATE = "adversary.reference_check=false"


def _shard(tmp: Path, data: Path, url: str, sweep: Path, index: int, count: int = 2) -> subprocess.Popen:
    """One shard as a sweep job runs it: run_vc.py into SWEEP/<index> (a Hydra multirun names its jobs so)."""
    return subprocess.Popen(
        [sys.executable, str(REPO / "run_vc.py"), "--config-name", "demo", f"paths.results_dir={tmp / 'results'}",
         f"dataset.manifest_filename={data / 'metadata.json'}", f"dataset.root_path={data}",
         f"adversary.endpoint_url={url}/v1/tts", "+vc.generate_only=true", NO_GATE, "adversary.ready_timeout=5",
         f"vc.shard.count={count}", f"vc.shard.index={index}", f"hydra.run.dir={sweep / str(index)}"],
        cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")})


def _generated(run_dir: Path) -> int:
    path = run_dir / "sample_events.jsonl"
    lines = path.read_bytes().split(b"\n")[:-1] if path.exists() else []
    return sum(1 for line in lines if b'"event": "sample"' in line and b'"status": "generated"' in line)


def _samples(merged: Path) -> list[tuple]:
    manifest = json.loads((merged / "run_manifest.json").read_text())
    return [(s["sample_id"], s["status"], s["audio_sha256"]) for s in manifest["samples"]]


@pytest.fixture(scope="module")
def stopped(tmp_path_factory, demo_dataset):
    """A 2-shard generate-only sweep whose shard 1 got SIGTERM after its first sample, and the same sweep run
    through (the reference)."""
    tmp = tmp_path_factory.mktemp("stopped")
    with running_standin(latency=0.4, max_lifetime=600) as server:
        reference = tmp / "reference"
        jobs = [_shard(tmp, demo_dataset, server.url, reference, i) for i in (0, 1)]
        sweep = tmp / "sweep"
        jobs.append(_shard(tmp, demo_dataset, server.url, sweep, 0))
        victim = _shard(tmp, demo_dataset, server.url, sweep, 1)
        deadline = time.monotonic() + 120
        while _generated(sweep / "1") < 1 and time.monotonic() < deadline and victim.poll() is None:
            time.sleep(0.02)
        assert victim.poll() is None, "shard 1 finished before it could be stopped"
        victim.send_signal(signal.SIGTERM)  # what scancel sends to the job step
        assert victim.wait(timeout=60) != 0
        assert all(job.wait(timeout=300) == 0 for job in jobs)
        yield {"tmp": tmp, "sweep": sweep, "reference": merge(reference)}


def test_a_stopped_shard_is_refused_naming_it_its_pairs_and_the_resume_command(stopped):
    sweep = stopped["sweep"]
    manifest = json.loads((sweep / "1" / "run_manifest.json").read_text())
    unfinished = [s["pair_id"] for s in manifest["samples"] if s["status"] != "generated"]
    assert manifest["status"] == "interrupted" and unfinished
    with pytest.raises(ClonebenchError) as refused:
        merge(sweep)
    message = str(refused.value)
    assert "shard 1 (interrupted)" in message and f"{len(unfinished)} unfinished pair(s)" in message
    assert unfinished[0] in message and "shard 0" not in message
    assert f"vc.resume_from={sweep / '1'}" in message
    assert sorted(p.name for p in sweep.iterdir()) == ["0", "1"]  # a refusal leaves nothing behind


def test_the_printed_resume_command_resumes_the_shard_and_the_merge_equals_the_uninterrupted_sweep(stopped):
    sweep = stopped["sweep"]
    with pytest.raises(ClonebenchError) as refused:
        merge(sweep)
    command = next(line.split("resume it: ", 1)[1] for line in str(refused.value).splitlines() if "resume it: " in line)
    argv = shlex.split(command)
    assert argv[:2] == ["python", "run_vc.py"]
    done = subprocess.run([sys.executable, str(REPO / "run_vc.py"), *argv[2:]], cwd=stopped["tmp"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert done.returncode == 0, done.stderr[-3000:]
    assert (sweep / "1-resumed" / "run_manifest.json").is_file()
    merged = merge(os.path.relpath(sweep))  # a relative path, as Hydra and the docs print it
    assert _samples(merged) == _samples(stopped["reference"])
    record = json.loads((merged / "merge.json").read_text())
    assert record["shards"] == ["0", "1-resumed"] and record["superseded"] == {"1-resumed": ["1"]}
    shards = json.loads((merged / "run_manifest.json").read_text())["shards"]
    assert [s["folder"] for s in shards] == ["0", "1-resumed"]
    assert shards[1]["resume_origin"].endswith("/1") and shards[1]["superseded"] == ["1"]


def test_a_refused_merge_keeps_the_earlier_merge_and_leaves_nothing(stopped, tmp_path):
    sweep = tmp_path / "sweep"
    shutil.copytree(stopped["sweep"] / "0", sweep / "0")
    shutil.copytree(stopped["sweep"] / "1", sweep / "1")
    shutil.copytree(stopped["reference"], sweep / "merged")  # an earlier complete merge
    before = {p.relative_to(sweep): p.read_bytes() for p in (sweep / "merged").rglob("*") if p.is_file()}
    with pytest.raises(ClonebenchError, match="did not finish"):
        merge(sweep)
    after = {p.relative_to(sweep): p.read_bytes() for p in (sweep / "merged").rglob("*") if p.is_file()}
    assert after == before and sorted(p.name for p in sweep.iterdir()) == ["0", "1", "merged"]


def test_a_half_written_merge_of_an_older_version_does_not_block(stopped, tmp_path):
    """An older clonebench wrote into merged/ itself and merge.json last: a refusal left WAVs and a manifest."""
    sweep = tmp_path / "sweep"
    shutil.copytree(stopped["reference"].parent / "0", sweep / "0")
    shutil.copytree(stopped["reference"].parent / "1", sweep / "1")
    stale = sweep / "merged"
    wav = next((sweep / "0" / "generated_audio").rglob("*.wav"))
    (stale / "generated_audio" / wav.parent.name).mkdir(parents=True)
    shutil.copyfile(wav, stale / "generated_audio" / wav.parent.name / wav.name)
    (stale / "run_manifest.json").write_text("{}")
    merged = merge(sweep)
    assert _samples(merged) == _samples(stopped["reference"]) and (merged / "merge.json").is_file()
    mine = tmp_path / "sweep" / "merged"
    shutil.rmtree(mine)
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")  # not a merge's file: refused, never deleted
    with pytest.raises(ClonebenchError, match="not a merge output"):
        merge(sweep)
    assert (mine / "notes.txt").read_text() == "keep"


def test_each_shards_provenance_is_listed_per_shard_in_the_merged_run(stopped, tmp_path):
    """A block a shard records about itself (e.g. its cluster job) is copied per shard, never merged into one."""
    sweep = tmp_path / "sweep"
    for index in (0, 1):
        shutil.copytree(stopped["reference"].parent / str(index), sweep / str(index))
        path = sweep / str(index) / "run_manifest.json"
        manifest = json.loads(path.read_text())
        manifest["cluster"] = {"job_id": f"41_{index}", "array_task": index, "node": f"node{index}"}
        path.write_text(json.dumps(manifest))
    merged = json.loads((merge(sweep) / "run_manifest.json").read_text())
    assert "cluster" not in merged
    assert [s["cluster"] for s in merged["shards"]] == [{"job_id": f"41_{i}", "array_task": i, "node": f"node{i}"}
                                                        for i in (0, 1)]
    assert [s["shard"] for s in merged["shards"]] == [{"index": 0, "count": 2}, {"index": 1, "count": 2}]
