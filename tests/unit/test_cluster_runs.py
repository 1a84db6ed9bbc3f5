"""Cluster provenance (only the named SLURM variables, never the environment) and a requeued job's attempt folder
(runs/requeue.py). The real cluster behaviour is tests/e2e/test_slurm_cluster.py."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from clonebench.core.provenance import cluster_provenance
from clonebench.generate.journal import JOURNAL_NAME
from clonebench.runs.requeue import requeued_attempt

SLURM = {"SLURM_JOB_ID": "812", "SLURM_ARRAY_JOB_ID": "810", "SLURM_ARRAY_TASK_ID": "2", "SLURMD_NODENAME": "node17",
         "SLURM_JOB_PARTITION": "cpu", "SLURM_SUBMIT_HOST": "login1", "SLURM_RESTART_COUNT": "1"}


def test_cluster_provenance_reads_only_the_named_variables():
    environ = {**SLURM, "SLURM_JOB_ACCOUNT": "lab", "FISH_API_KEY": "sk-secret", "SLURM_EXPORT_ENV": "ALL"}
    assert cluster_provenance(environ) == {"scheduler": "slurm", "job_id": "812", "array_job_id": "810",
                                           "array_task_id": "2", "node": "node17", "partition": "cpu",
                                           "submit_host": "login1", "restart_count": "1"}
    assert cluster_provenance({"FISH_API_KEY": "sk-secret"}) is None
    assert cluster_provenance({"SLURM_JOB_ID": "9" * 500})["job_id"] == "9" * 128


def run_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / JOURNAL_NAME).write_text("")
    return path


def test_a_requeued_job_resumes_its_newest_attempt_into_a_new_folder(tmp_path):
    cfg = OmegaConf.create({"vc": {"resume_from": None}, "run_name": "demo"})
    job = run_folder(tmp_path / "sweep" / "3")
    assert requeued_attempt(cfg, job, {}) == (cfg, job)  # not requeued: unchanged
    assert requeued_attempt(cfg, tmp_path / "sweep" / "4", {"SLURM_RESTART_COUNT": "1"})[1] == tmp_path / "sweep" / "4"
    first, target = requeued_attempt(cfg, job, {"SLURM_RESTART_COUNT": "1"})
    assert target == tmp_path / "sweep" / "3-requeue1" and first.vc.resume_from == str(job)
    assert cfg.vc.resume_from is None  # the caller's config is not changed
    run_folder(target)
    second, target2 = requeued_attempt(cfg, job, {"SLURM_RESTART_COUNT": "2"})
    assert target2 == tmp_path / "sweep" / "3-requeue2" and second.vc.resume_from == str(target)
    (tmp_path / "sweep" / "3-requeue2").mkdir()  # an attempt that died before its journal is never written into
    assert requeued_attempt(cfg, job, {"SLURM_RESTART_COUNT": "2"})[1] == tmp_path / "sweep" / "3-requeue2.1"


def test_a_requeue_is_told_from_a_cancel_by_the_restart_count(tmp_path, monkeypatch):
    from clonebench.runs.requeue import being_requeued

    scontrol = tmp_path / "scontrol"  # the controller's answer while it requeues (Restarts already counted)
    scontrol.write_text("#!/bin/sh\necho 'JobId=2 JobName=x JobState=COMPLETING Reason=None Requeue=1 Restarts=1 '\n")
    scontrol.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{__import__('os').environ['PATH']}")
    assert being_requeued({"SLURM_JOB_ID": "2"})
    assert not being_requeued({"SLURM_JOB_ID": "2", "SLURM_RESTART_COUNT": "1"})  # this attempt is that restart
    assert not being_requeued({})
