"""What SLURM itself says about a sweep's jobs: whether a shard whose records are unfinished is still queued or
running there (requeued after a time limit or a preemption, or still writing), so that neither the sweep's exit
status nor ``clonebench status`` calls a live job dead.

Why it is needed: submitit tells a finished job by its result file alone where ``sacct`` is unavailable (a
cluster without accounting storage), and one attempt of a requeued job can leave that file while the next attempt
is still pending or running; Hydra's launcher then returns early. The journal of the newest attempt cannot tell a
job still running from one that died, ``squeue`` can. Where no ``squeue`` answers (no SLURM, a local launcher),
nothing is known and nothing changes.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterable

# states of a job SLURM will still run (or is still ending); a held job (JobHeld*, REQUEUE_HOLD, SUSPENDED) waits
# for a person and is reported, not waited for
LIVE_STATES = frozenset({"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "REQUEUED", "REQUEUE_FED", "RESIZING",
                         "SIGNALING", "STAGE_OUT"})
HELD_REASONS = ("JobHeldUser", "JobHeldAdmin")

QueueReader = Callable[[Iterable[str]], dict[str, str]]


def queued_jobs(job_ids: Iterable[str]) -> dict[str, str]:
    """``{job id: "STATE (reason)"}`` for each of ``job_ids`` (``<array>_<task>`` or a plain job id) that SLURM
    still holds in its queue, as ``squeue`` shows it (array tasks one per line); {} without a working ``squeue``."""
    wanted = {str(j) for j in job_ids if j}
    if not wanted or shutil.which("squeue") is None:
        return {}
    try:
        out = subprocess.run(["squeue", "--noheader", "--array", "--format=%i|%T|%r"], capture_output=True,
                             text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if out.returncode:
        return {}
    found = {}
    for line in out.stdout.splitlines():
        job, _, rest = line.strip().partition("|")
        state, _, reason = rest.partition("|")
        if job in wanted and state:
            found[job] = f"{state} ({reason})" if reason and reason != "None" else state
    return found


def is_live(queued: str) -> bool:
    """Whether a job in this ``queued_jobs`` state will still run or end by itself (not held for a person)."""
    state = queued.split(" ", 1)[0]
    return state in LIVE_STATES and not any(reason in queued for reason in HELD_REASONS)


def with_queue(summary: dict, read: QueueReader = queued_jobs) -> dict:
    """``summary`` (``runs/sweep.sweep_status``) with each unfinished shard whose job SLURM still holds marked:
    ``queued`` (its squeue state), ``live`` (it will run or end without anyone), a state that says so in place of
    what its records alone suggest, and no next command (resuming a shard that still runs would send its pairs
    twice)."""
    unfinished = [s for s in summary["shards"] if not s["ok"] and s.get("job_id")]
    states = read(s["job_id"] for s in unfinished) if unfinished else {}
    for shard in unfinished:
        queued = states.get(shard["job_id"])
        if queued is None:
            continue
        live = is_live(queued)
        records = shard["state"]
        shard.update(queued=queued, live=live, next=None,
                     state=(f"still in SLURM's queue: {queued}; its records so far: {records}" if live else
                            f"held in SLURM's queue: {queued} (scontrol release {shard['job_id']} lets it run); "
                            f"its records so far: {records}"))
    summary["live"] = sum(1 for s in summary["shards"] if s.get("live"))
    return summary
