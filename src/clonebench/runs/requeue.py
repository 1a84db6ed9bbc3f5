"""A SLURM job that was requeued (a time limit or a preemption caught by submitit, which checkpoints and requeues
it) runs again with the same Hydra job folder, which already holds the earlier attempt's journal. Writing into it
again would resend every pair; instead this attempt resumes from the newest earlier attempt (``vc.resume_from``)
into a sibling folder ``<job folder>-requeue<k>`` (k: SLURM_RESTART_COUNT), so its finished pairs are reused and
nothing is sent twice. ``clonebench status`` and ``clonebench merge`` follow the chain to the newest attempt.

The attempt that is requeued gets SIGTERM (SLURM stops it to requeue it): the run journals "interrupted" as for
any SIGTERM, but the process then ends without a result (``being_requeued``), so the launcher waits for the
requeued attempt instead of reporting the shard finished.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict

from clonebench.generate.journal import JOURNAL_NAME

log = logging.getLogger("clonebench")


def requeued_attempt(cfg: DictConfig, run_dir: Path, environ=os.environ) -> tuple[DictConfig, Path]:
    """(config, run folder) of this attempt: unchanged unless SLURM requeued the job and its folder holds a run."""
    try:
        restarts = int(environ.get("SLURM_RESTART_COUNT") or 0)
    except ValueError:
        restarts = 0
    if restarts < 1 or not (Path(run_dir) / JOURNAL_NAME).is_file():
        return cfg, run_dir
    earlier = [Path(run_dir)] + [Path(f"{run_dir}-requeue{k}") for k in range(1, restarts)]
    previous = [p for p in earlier if (p / JOURNAL_NAME).is_file()][-1]
    target, extra = Path(f"{run_dir}-requeue{restarts}"), 1
    while target.exists():  # a requeue that died before its own journal: never write into another attempt
        target, extra = Path(f"{run_dir}-requeue{restarts}.{extra}"), extra + 1
    cfg = OmegaConf.create(OmegaConf.to_container(cfg, resolve=False))
    with open_dict(cfg):
        OmegaConf.update(cfg, "vc.resume_from", str(previous), force_add=True)
    log.warning("SLURM requeued this job (restart %d): resuming from %s into %s", restarts, previous, target)
    return cfg, target


def being_requeued(environ=os.environ) -> bool:
    """Whether the SIGTERM this SLURM job got is SLURM requeueing it (a time limit submitit requeued, a preemption
    in REQUEUE mode) rather than ending it (``scancel``): the controller has already counted the restart
    (``Restarts`` beyond this attempt's SLURM_RESTART_COUNT; the job shows COMPLETING meanwhile). A requeued job must
    end without a result, so that submitit and Hydra wait for the next attempt."""
    job = environ.get("SLURM_JOB_ID")
    if not job or shutil.which("scontrol") is None:
        return False
    for attempt in range(3):  # a busy controller: asked again rather than taken for a cancel (the result would end
        if attempt:           # the shard for the launcher while its requeued attempt runs)
            time.sleep(1.0)
        try:
            done = subprocess.run(["scontrol", "show", "job", "--oneliner", job], capture_output=True, text=True,
                                  timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            continue
        restarts = re.search(r"\bRestarts=(\d+)", done.stdout)
        if done.returncode == 0 and restarts:
            try:
                return int(restarts.group(1)) > int(environ.get("SLURM_RESTART_COUNT") or 0)
            except ValueError:
                return False
    return False
