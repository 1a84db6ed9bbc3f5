"""A sweep's outcome read back from its shards' own records (runs/sweep.py, runs/sweep_outcome.py), on one machine:
a shard that never started is listed with its scheduler job and log, the sweep's exit status is non-zero, and an
all-finished sweep points at merge. The same on a real SLURM: tests/e2e/test_slurm_cluster.py."""

from __future__ import annotations

import json

from omegaconf import OmegaConf

from clonebench.runs import sweep_outcome
from clonebench.runs.scheduler import with_queue
from clonebench.runs.sweep import sweep_lines, sweep_status
from clonebench.standin import running_standin
from tests.conftest import generate_run


def test_a_shard_that_never_started_fails_the_sweep(tmp_path, demo_dataset, capsys):
    sweep = tmp_path / "results" / "demo" / "multirun-x"
    with running_standin(max_lifetime=300) as server:
        for index in (0, 2):
            status, _ = generate_run(tmp_path, demo_dataset, server.url, "vc.shard.count=3", f"vc.shard.index={index}",
                                     "adversary.reference_check=false", run_dir=sweep / str(index))
            assert status.value == "generated"
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    log = sweep / ".submitit" / "77_1" / "77_1_0_log.err"  # what submitit leaves for array task 1 of job 77
    log.parent.mkdir(parents=True)
    log.write_text("")
    summary = sweep_status(sweep)
    assert summary["shard_count"] == 3 and not summary["ok"] and summary["next"] is None
    missing = summary["shards"][1]
    assert missing["shard"] == 1 and missing["state"].startswith("not started") and missing["job_id"] == "77_1"
    assert missing["log"] == str(log)
    assert [s["ok"] for s in summary["shards"]] == [True, False, True]
    assert [s["done"] for s in summary["shards"]] == [2, 0, 3]  # 8 pairs in sorted-id blocks of 2/3/3
    assert "1 of 3 shard(s) unfinished" in sweep_lines(summary)[0]

    config = OmegaConf.create({"hydra": {"sweep": {"dir": str(sweep)}}, "vc": {"shard": {"count": 3}}})
    sweep_outcome.SweepOutcome().on_multirun_start(config)
    assert sweep_outcome.finish(0) == 1  # Hydra said 0: the shard's absence makes it 1
    assert "shard 1: job 77_1 on -: not started" in capsys.readouterr().err
    assert sweep_outcome.finish(0) == 0  # nothing launched since


def test_a_finished_sweep_points_at_merge(tmp_path, demo_dataset):
    sweep = tmp_path / "multirun-y"
    with running_standin(max_lifetime=300) as server:
        for index in range(2):
            generate_run(tmp_path, demo_dataset, server.url, "vc.shard.count=2", f"vc.shard.index={index}",
                         "adversary.reference_check=false", run_dir=sweep / str(index))
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    summary = sweep_status(sweep)
    assert summary["ok"] and summary["next"] == f"clonebench merge {sweep}"
    assert [(s["done"], s["left"], s["state"]) for s in summary["shards"]] == [(4, 0, "generated")] * 2
    assert json.loads(json.dumps(summary)) == summary  # what --json prints


def test_a_shard_slurm_still_holds_is_waited_for_not_called_dead(tmp_path, demo_dataset, capsys):
    """The launcher returned, but the scheduler still holds shard 1's job (requeued, pending): the sweep waits for it
    (runs/scheduler.py's reader asked again each poll), status says so and offers no resume command meanwhile; a job
    held for a person is reported, not waited for. The reader here stands for squeue, which the SLURM test runs."""
    sweep = tmp_path / "multirun-z"
    with running_standin(max_lifetime=300) as server:
        for index in (0, 2):
            generate_run(tmp_path, demo_dataset, server.url, "vc.shard.count=3", f"vc.shard.index={index}",
                         "adversary.reference_check=false", run_dir=sweep / str(index))
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    (sweep / ".submitit" / "91_1").mkdir(parents=True)
    (sweep / ".submitit" / "91_1" / "91_1_0_log.err").write_text("")
    answers = [{"91_1": "PENDING (BeginTime)"}, {"91_1": "RUNNING"}, {}]
    asked, slept = [], []

    def squeue(jobs):
        asked.append(sorted(jobs))
        return answers[min(len(asked), len(answers)) - 1]

    summary = with_queue(sweep_status(sweep, 3), squeue)
    shard = summary["shards"][1]
    assert summary["live"] == 1 and shard["live"] and shard["next"] is None and not summary["ok"]
    assert shard["state"].startswith("still in SLURM's queue: PENDING (BeginTime); its records so far: not started")
    asked.clear()
    summary = sweep_outcome.settled(sweep, 3, squeue, poll_s=7.0, sleep=slept.append)
    assert asked == [["91_1"]] * 3 and slept == [7.0, 7.0]  # asked until the queue no longer holds it
    assert summary["live"] == 0 and summary["shards"][1]["state"].startswith("not started")
    assert summary["shards"][1]["next"]  # gone from the queue without records: now it may be run again
    said = capsys.readouterr().err
    assert said.count("SLURM still holds shard 1 (job 91_1: PENDING (BeginTime))") == 1

    held = with_queue(sweep_status(sweep, 3), lambda jobs: {"91_1": "PENDING (JobHeldAdmin)"})
    shard = held["shards"][1]
    assert held["live"] == 0 and not shard["live"] and shard["next"] is None
    assert "held in SLURM's queue: PENDING (JobHeldAdmin) (scontrol release 91_1 lets it run)" in shard["state"]
    slept.clear()
    assert not sweep_outcome.settled(sweep, 3, lambda jobs: {"91_1": "PENDING (JobHeldAdmin)"},
                                     sleep=slept.append)["ok"] and slept == []
    assert with_queue(sweep_status(sweep, 3), lambda jobs: {})["live"] == 0  # no squeue: nothing known
