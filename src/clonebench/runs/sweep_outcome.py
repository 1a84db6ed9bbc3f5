"""A sweep's outcome is never hidden: ``run_vc.py -m ...`` ends with one line per shard and exits non-zero when
any shard is unfinished (interrupted, timed out, preempted, failed, partial, never started).

Hydra's launchers cannot tell: a shard that catches SIGTERM (``scancel``, a time limit, a preemption) journals
"interrupted" and returns normally, so submitit and Hydra record a completed job, and a multirun ignores its jobs'
return values. ``SweepOutcome`` (a Hydra callback, ``hydra.callbacks`` in ``configs/vc.yaml``) notes the sweep
folder and its shard count when the multirun starts; ``finish`` (called by ``run_vc.py`` once Hydra returns or
exits) reads every shard's own records (``runs/sweep.py``) and turns them into the exit status.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from clonebench.core.errors import ClonebenchError
from clonebench.core.redact import shown
from clonebench.runs.sweep import sweep_lines, sweep_status

_started: list[tuple[Path, int | None]] = []  # the sweeps this process launched (one per run_vc.py -m)


class SweepOutcome(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        count = config.get("vc", {}).get("shard", {}).get("count")
        _started.append((Path(str(config.hydra.sweep.dir)), count if isinstance(count, int) else None))


def finish(code: int | None) -> int:
    """The exit status of ``run_vc.py``: ``code`` (Hydra's) for a single run; for a sweep, non-zero when Hydra
    failed or any shard is unfinished, after printing every shard's line."""
    code = code or 0
    while _started:
        sweep, count = _started.pop(0)
        try:
            summary = sweep_status(sweep, count)
        except (ClonebenchError, OSError) as exc:
            print(f"clonebench: the sweep's shards cannot be read back: {shown(exc)}", file=sys.stderr)
            code = code or 1
            continue
        for line in sweep_lines(summary):
            print(shown(line), file=sys.stderr)
        if not summary["ok"]:
            code = code or 1
    return code
