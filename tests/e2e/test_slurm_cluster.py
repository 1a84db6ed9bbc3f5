"""docs/clusters.md on a real one-node SLURM (tests/slurm_cluster.py: Debian's munged, slurmctld and slurmd, started
by PID): the page's commands run as printed, with the stand-in's address for the page's, and for the evaluate sweep
(the test node has no GPU) ``cuda:0`` -> ``cpu``, no GPU and one CPU per job, and MCD alone (no model to load; the
demo's full metric set is `make demo`'s test). The scancel and requeue sweeps skip the reference gate (time).

- the recipe: a 4-shard generate sweep (merged, equal to the unsharded run in every id, seed and audio hash; each
  shard records its job, array task, node, partition, submit host), status, merge, evaluate sweep, report;
- ``scancel`` of a shard mid-run: the sweep exits 1 with the shard's line, merge refuses and leaves nothing, status
  shows it with the command that resumes it, which sends only the missing pair; merged, the sweep equals the
  unsharded run;
- a time-limit requeue: the signal SLURM sends before a job's limit (``--signal=USR2@signal_delay_s``, here sent
  with ``scancel --signal=USR2`` instead of waiting a minute; with ``timeout_min=1`` submitit counts it as a time
  limit) makes submitit requeue the job, which resumes its earlier attempt without resending; the same when SLURM
  requeues the running job itself (``scontrol requeue``, as a preemption in REQUEUE mode does). While the requeued
  job waits in the queue, status reads squeue and shows it waiting, with no resume command.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clonebench.runs.status import summarise
from clonebench.standin import running_standin
from tests.conftest import REPO, generate_run
from tests.e2e.test_readme_commands import readme_command

GENERATE = "python run_vc.py --config-name demo -m hydra/launcher=slurm_cpu_generate"
STATUS = "clonebench status results/demo/multirun-<stamp>-<id>"
MERGE = "clonebench merge results/demo/multirun-"
EVALUATE = "python run_vc.py --config-name demo -m hydra/launcher=slurm_gpu_evaluate"
REPORT = "clonebench report results/demo/multirun-"
README_COMMANDS = (GENERATE, STATUS, MERGE, EVALUATE, REPORT)
CLI = [sys.executable, "-c", "import sys; from clonebench.cli.main import main; sys.exit(main())"]
DOCS_URL = "http://127.0.0.1:18011"
SWEEP = "results/demo/multirun-<stamp>-<id>"
EVALUATED = "results/demo/multirun-<evaluate-stamp>-<id>"

def argv(prefix: str, sweep: Path | None = None, url: str | None = None, *extra: str) -> list[str]:
    command = readme_command(prefix)
    if url:
        command = command.replace(DOCS_URL, url)
    if sweep is not None:
        command = command.replace(SWEEP, str(sweep))
    words = shlex.split(command) + list(extra)
    if words[0] == "clonebench":
        return CLI + words[1:]
    return [sys.executable if w == "python" else str(REPO / w) if w == "run_vc.py" else w for w in words]


def env(cluster) -> dict:
    return {**cluster.env, "PYTHONPATH": f"{REPO / 'src'}:{REPO}", "HF_HUB_OFFLINE": "1"}


def run(command: list[str], cwd: Path, cluster, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, env=env(cluster), capture_output=True, text=True, timeout=timeout)


def said(done: subprocess.CompletedProcess) -> str:
    return done.stdout[-3000:] + done.stderr[-4000:]


def new_sweep(workspace: Path, before: set) -> Path:
    found = set((workspace / "results" / "demo").glob("multirun-*")) - before
    assert len(found) == 1, found
    return Path(os.path.relpath(found.pop(), workspace))


def sweeps(workspace: Path) -> set:
    return set((workspace / "results" / "demo").glob("multirun-*"))


def pairs(manifest: dict) -> list[tuple]:
    """What a merged run must share with the unsharded one: ids, seeds, statuses and audio hashes, in order."""
    return [(s["sample_id"], s["pair_id"], s.get("seed"), s["status"], s.get("audio_sha256"))
            for s in manifest["samples"]]


def manifest(folder: Path) -> dict:
    return json.loads((folder / "run_manifest.json").read_text())


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, demo_dataset) -> Path:
    """A folder to submit from: the demo config reads its pairs from results/demo/data."""
    root = tmp_path_factory.mktemp("cluster")
    shutil.copytree(demo_dataset, root / "results" / "demo" / "data")
    return root


@pytest.fixture(scope="module")
def unsharded(workspace, tmp_path_factory):
    """The same pairs in one run on this machine, against its own stand-in (same seed: the same audio)."""
    with running_standin(max_lifetime=600) as server:
        status, run_dir = generate_run(tmp_path_factory.mktemp("unsharded"), workspace / "results" / "demo" / "data",
                                       server.url)
    assert status.value == "generated"
    return pairs(manifest(run_dir))


def wait_for_a_pair(folder: Path, cluster, what: str) -> dict:
    """Wait until the shard in ``folder`` has generated a pair; its manifest then names its job."""
    def ready():
        if not (folder / "run_manifest.json").is_file():
            return None
        try:
            summary = summarise(folder)
        except Exception:  # written while read
            return None
        return manifest(folder) if summary.get("generated", 0) >= 1 else None

    return cluster.wait_for(ready, 180, what)


def job_of(shard_manifest: dict) -> str:
    cluster = shard_manifest["cluster"]
    return f"{cluster['array_job_id']}_{cluster['array_task_id']}"


def test_the_recipe_on_slurm(slurm_cluster, workspace, unsharded):
    with running_standin(max_lifetime=600) as server:
        before = sweeps(workspace)
        done = run(argv(GENERATE, None, server.url), workspace, slurm_cluster)
    assert done.returncode == 0, said(done)
    sweep = new_sweep(workspace, before)
    assert f"sweep {sweep}: every shard finished" in done.stderr, said(done)
    status = run(argv(STATUS, sweep), workspace, slurm_cluster)
    finished = f"on {slurm_cluster.node}: generated; 2 pair(s) done, 0 left"
    assert status.returncode == 0 and status.stdout.count(finished) == 4, said(status)
    overview = json.loads(run(argv(STATUS, sweep, None, "--json"), workspace, slurm_cluster).stdout)
    assert [s["shard"] for s in overview["shards"]] == [0, 1, 2, 3] and overview["ok"]
    for index in range(4):  # each shard's provenance: its own array task, on this node, from this host
        record = manifest(workspace / sweep / str(index))["cluster"]
        assert record["array_task_id"] == str(index) and record["node"] == slurm_cluster.node
        assert record["partition"] == "cpu" and record["submit_host"] and record["job_id"].isdigit()
        assert overview["shards"][index]["job_id"] == job_of({"cluster": record})
        assert len(manifest(workspace / sweep / str(index))["samples"]) == 2  # balanced: 2/2/2/2 of 8
    merged = run(argv(MERGE, sweep), workspace, slurm_cluster)
    assert merged.returncode == 0, said(merged)
    merged_run = manifest(workspace / sweep / "merged")
    assert pairs(merged_run) == unsharded
    jobs = sorted(job_of(entry) for entry in merged_run["shards"])  # each shard's provenance, kept in the merge
    assert jobs == sorted(s["job_id"] for s in overview["shards"])
    before = sweeps(workspace)
    on_cpu = [w.replace("cuda:0", "cpu") for w in argv(EVALUATE, sweep)]
    scored = run([*on_cpu, "hydra.launcher.gpus_per_node=null", "hydra.launcher.cpus_per_task=1",
                  "hydra.launcher.mem_gb=4", "evaluation.metrics=[mcd]"], workspace, slurm_cluster)
    assert scored.returncode == 0, said(scored)
    evaluated = new_sweep(workspace, before)
    metrics = json.loads((workspace / evaluated / "0" / "metrics.json").read_text())
    assert metrics["status"] == "complete" and metrics["metrics"]["mcd"]["n_valid"] == 8
    report = run([w.replace(EVALUATED, str(evaluated)) for w in argv(REPORT)], workspace, slurm_cluster)
    assert report.returncode == 0, said(report)


@pytest.fixture(scope="module")
def cancelled(slurm_cluster, workspace):
    """A generate sweep whose shard 1 is cancelled (``scancel``) after its first pair; what the sweep, a merge and
    status said then; then that shard resumed with the command status gave, and the sweep merged again."""
    seen = {}
    with running_standin(max_lifetime=600, latency=2.0) as server:
        before = sweeps(workspace)
        sweep_process = subprocess.Popen(argv(GENERATE, None, server.url, "adversary.reference_check=false"),
                                         cwd=workspace, env=env(slurm_cluster), stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True)
        try:
            found = slurm_cluster.wait_for(lambda: sweeps(workspace) - before, 120, "the sweep folder")
            sweep = Path(os.path.relpath(found.pop(), workspace))
            shard = wait_for_a_pair(workspace / sweep / "1", slurm_cluster, "shard 1's first pair")
            seen["job"] = job_of(shard)
            slurm_cluster.run("scancel", seen["job"])
            out, err = sweep_process.communicate(timeout=400)
        finally:
            if sweep_process.poll() is None:
                sweep_process.kill()
        seen.update(sweep=sweep, code=sweep_process.returncode, stderr=err)
        refused = run(argv(MERGE, sweep), workspace, slurm_cluster)
        seen.update(merge_code=refused.returncode, merge_said=said(refused),
                    merged_left=(workspace / sweep / "merged").exists())
        seen["status"] = run(argv(STATUS, sweep), workspace, slurm_cluster).stdout
        seen["overview"] = json.loads(run(argv(STATUS, sweep, None, "--json"), workspace, slurm_cluster).stdout)
        shard_one = next(s for s in seen["overview"]["shards"] if s["shard"] == 1)
        command = shlex.split(shard_one["next"])  # the job's own overrides: this stand-in's address
        seen["received_before"] = len(server.received)
        resumed = run([sys.executable if w == "python" else str(REPO / w) if w == "run_vc.py" else w
                       for w in command], workspace, slurm_cluster)
        seen.update(resume=resumed, received_after=len(server.received))
    seen["after"] = json.loads(run(argv(STATUS, sweep, None, "--json"), workspace, slurm_cluster).stdout)
    seen["merge"] = run(argv(MERGE, sweep), workspace, slurm_cluster)
    return seen


def test_a_cancelled_shard_fails_the_sweep_and_status_names_it(cancelled, slurm_cluster, workspace):
    assert cancelled["code"] == 1, cancelled["stderr"][-3000:]
    line = next(x for x in cancelled["stderr"].splitlines() if x.strip().startswith("shard 1:"))
    assert f"job {cancelled['job']} on {slurm_cluster.node}: interrupted; 1 pair(s) done, 1 left; log " in line
    assert "1 of 4 shard(s) unfinished" in cancelled["stderr"]
    assert f"shard 1: job {cancelled['job']} on {slurm_cluster.node}: interrupted" in cancelled["status"]
    shard = next(s for s in cancelled["overview"]["shards"] if s["shard"] == 1)
    assert shard["state"] == "interrupted" and (shard["done"], shard["left"]) == (1, 1)
    assert not cancelled["overview"]["ok"]
    assert f"vc.resume_from={workspace / cancelled['sweep'] / '1'}" in shard["next"]
    assert all(s["ok"] for s in cancelled["overview"]["shards"] if s["shard"] != 1)


def test_merge_refuses_the_cancelled_sweep_and_leaves_nothing(cancelled):
    assert cancelled["merge_code"] != 0, cancelled["merge_said"]
    assert "shard 1 (interrupted): 1 unfinished pair(s)" in cancelled["merge_said"]
    assert "vc.resume_from=" in cancelled["merge_said"]
    assert not cancelled["merged_left"]


def test_the_resumed_shard_sends_only_the_missing_pair(cancelled, workspace):
    resumed = cancelled["resume"]
    assert resumed.returncode == 0, said(resumed)
    shard = next(s for s in cancelled["after"]["shards"] if s["shard"] == 1)
    assert shard["ok"] and shard["attempts"] == 2 and shard["folder"].endswith("1-resumed") and cancelled["after"]["ok"]
    summary = summarise(workspace / shard["folder"])
    assert summary["generated"] == 2 and summary["attempts"] == 1  # one pair reused, one sent
    assert manifest(workspace / shard["folder"])["resumed_from"]["reused"] == 1
    gate = sum(summary["gate_attempts"].values())
    assert cancelled["received_after"] - cancelled["received_before"] == 1 + gate


def test_the_resumed_sweep_merges_equal_to_the_unsharded_run(cancelled, workspace, unsharded):
    assert cancelled["merge"].returncode == 0, said(cancelled["merge"])
    assert pairs(manifest(workspace / cancelled["sweep"] / "merged")) == unsharded


@pytest.mark.parametrize("stop", ["time_limit", "requeue"])
def test_a_requeued_shard_resumes_without_resending(slurm_cluster, workspace, stop):
    """``time_limit``: the signal SLURM sends before the limit, submitit requeues; ``requeue``: SLURM requeues the
    running job itself (``scontrol requeue``, what a preemption in REQUEUE mode does): SIGTERM, Restarts counted."""
    with running_standin(max_lifetime=600, latency=2.0) as server:
        before = sweeps(workspace)
        command = argv(GENERATE, None, server.url, "hydra.launcher.timeout_min=1", "hydra.launcher.signal_delay_s=5",
                       "adversary.reference_check=false")
        sweep_process = subprocess.Popen(command, cwd=workspace, env=env(slurm_cluster), stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True)
        try:
            found = slurm_cluster.wait_for(lambda: sweeps(workspace) - before, 120, "the sweep folder")
            sweep = Path(os.path.relpath(found.pop(), workspace))
            job = job_of(wait_for_a_pair(workspace / sweep / "0", slurm_cluster, "shard 0's first pair"))
            # what SLURM sends signal_delay_s before the limit, once (scancel retries while the job requeues, and
            # would signal the attempt being torn down, then the requeued one: stopped once submitit caught it)
            signal = subprocess.Popen(["scancel", "--signal=USR2", job] if stop == "time_limit" else
                                      ["scontrol", "requeue", job], env=slurm_cluster.env)
            log = workspace / sweep / ".submitit" / job / f"{job}_0_log.out"
            if stop == "time_limit":
                slurm_cluster.wait_for(lambda: log.is_file() and "Caught signal SIGUSR2" in log.read_text(), 120,
                                       "submitit to catch the time-limit signal")
                signal.kill()
                signal.wait()
            # SLURM holds a requeued job for a while (BeginTime); the test lets it start at once
            slurm_cluster.wait_for(lambda: any(j["id"] == job and j["reason"] == "BeginTime"
                                               for j in slurm_cluster.jobs()), 120, "the job to be requeued")
            signal.kill()
            signal.wait()
            # meanwhile status asks squeue: the shard is waiting in SLURM's queue, not dead, and not to be resumed
            held = json.loads(run(argv(STATUS, sweep, None, "--json"), workspace, slurm_cluster).stdout)["shards"][0]
            assert held["live"] and held["next"] is None and held["queued"].startswith("PENDING (BeginTime)"), held
            slurm_cluster.run("scontrol", "update", f"JobId={job}", "StartTime=now")
            out, err = sweep_process.communicate(timeout=500)
        finally:
            for process in (sweep_process, locals().get("signal")):
                if process is not None and process.poll() is None:
                    process.kill()
                    process.wait()
    assert sweep_process.returncode == 0, err[-4000:]
    first, attempt = workspace / sweep / "0", workspace / sweep / "0-requeue1"
    assert summarise(first)["status"] == "interrupted"  # from its journal, as status reads it
    record = manifest(attempt)
    assert record["cluster"]["restart_count"] == "1" and record["cluster"]["array_task_id"] == "0"
    reused = record["resumed_from"]["reused"]
    assert reused >= 1 and summarise(attempt)["generated"] == 2 and summarise(attempt)["attempts"] == 2 - reused
    assert summarise(first)["generated"] == reused  # every pair the first attempt finished, and only those, reused
    overview = json.loads(run(argv(STATUS, sweep, None, "--json"), workspace, slurm_cluster).stdout)
    shard = overview["shards"][0]
    assert overview["ok"] and shard["attempts"] == 2 and shard["folder"].endswith("0-requeue1")
