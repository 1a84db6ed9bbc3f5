"""Derived suite tasks (``derived_from`` + ``transform``: compression-*, narrowband): the seam where their scores
come from.

A derived task has no pairs of its own: its audio is its source task's generated audio after a transform (a codec
round trip, a telephone band), scored against the untransformed clone (rvcbench's ``_derived_rows``). The transform
and the derived scoring are the transform step's (``clonebench.evaluate.transform``, built separately); until it
fills :func:`score_derived_task`, a derived task is listed in the suite results with its source and transform and
the reason it has no scores, never silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clonebench.data.suite import Suite, Task

NOT_SCORED = "not scored yet: derived tasks are scored by the transform step (clonebench.evaluate.transform)"


@dataclass(frozen=True)
class DerivedOutcome:
    """What became of a derived task: its scored run directory (an evaluated run, as any task's), or why none."""

    task: str
    source_task: str
    run_dir: Path | None
    reason: str | None


def score_derived_task(suite: Suite, task: Task, source_run: Path | None, task_dir: Path,
                       settings) -> DerivedOutcome:
    """Transform ``source_run``'s generated audio as ``task.transform`` says and score it into ``task_dir``.

    The seam: ``source_run`` is the source task's generation run (None when it was not generated), ``settings``
    the run's settings. Returns the scored run directory, or None with the reason the task has no scores."""
    if source_run is None:
        return DerivedOutcome(task.name, str(task.derived_from), None,
                              f"source task {task.derived_from} was not generated")
    return DerivedOutcome(task.name, str(task.derived_from), None, NOT_SCORED)
