"""A sweep's outcome is never hidden: ``run_vc.py -m ...`` ends with one line per shard and exits non-zero when
any shard is unfinished (interrupted, timed out, preempted, failed, partial, never started).

Hydra's launchers cannot tell: a shard that catches SIGTERM (``scancel``, a time limit, a preemption) journals
"interrupted" and returns normally, so submitit and Hydra record a completed job, and a multirun ignores its jobs'
return values. ``SweepOutcome`` (a Hydra callback, ``hydra.callbacks`` in ``configs/vc.yaml``) notes the sweep
folder and its shard count when the multirun starts; ``finish`` (called by ``run_vc.py`` once Hydra returns or
exits) reads every shard's own records (``runs/sweep.py``) and turns them into the exit status.

The launcher can also return too early: where ``sacct`` is unavailable, submitit takes an earlier attempt's result
file of a requeued job for the job's end. So ``finish`` first waits while SLURM still holds an unfinished shard's
job (``runs/scheduler.py``: pending after a requeue, running), then reads the records the job left.
"""

from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from clonebench.core.errors import ClonebenchError
from clonebench.core.redact import shown
from clonebench.runs.scheduler import QueueReader, queued_jobs, with_queue
from clonebench.runs.sweep import sweep_lines, sweep_status

POLL_S = 5.0  # how often the queue is asked while a shard's job is still in it

_started: list[tuple[Path, int | None]] = []  # the sweeps this process launched (one per run_vc.py -m)


class SweepOutcome(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        count = config.get("vc", {}).get("shard", {}).get("count")
        _started.append((Path(str(config.hydra.sweep.dir)), count if isinstance(count, int) else None))


def settled(sweep: Path, count: int | None, read: QueueReader = queued_jobs, poll_s: float = POLL_S,
            sleep=time.sleep) -> dict:
    """The sweep's status once SLURM holds none of its unfinished shards' jobs as live (held ones are reported)."""
    for polls in itertools.count():
        summary = with_queue(sweep_status(sweep, count), read)
        if not summary["live"]:
            return summary
        if polls == 0:
            waiting = ", ".join(f"shard {s['shard']} (job {s['job_id']}: {s['queued']})"
                                for s in summary["shards"] if s.get("live"))
            print(shown(f"clonebench: the launcher returned, but SLURM still holds {waiting}: waiting for it "
                        f"(Ctrl-C leaves it running; clonebench status {sweep} shows it)"), file=sys.stderr)
        sleep(poll_s)


def finish(code: int | None) -> int:
    """The exit status of ``run_vc.py``: ``code`` (Hydra's) for a single run; for a sweep, non-zero when Hydra
    failed or any shard is unfinished, after printing every shard's line (once SLURM runs none of them)."""
    code = code or 0
    while _started:
        sweep, count = _started.pop(0)
        try:
            summary = settled(sweep, count)
        except (ClonebenchError, OSError) as exc:
            print(f"clonebench: the sweep's shards cannot be read back: {shown(exc)}", file=sys.stderr)
            code = code or 1
            continue
        for line in sweep_lines(summary):
            print(shown(line), file=sys.stderr)
        if not summary["ok"]:
            code = code or 1
    return code
