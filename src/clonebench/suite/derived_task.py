"""A suite's derived task (``derived_from`` + ``transform``: core-v1's compression-* and narrowband) scored as a run.

A derived task has no pairs of its own: every generated clip of its source task goes through the transform (a
codec round trip, a telephone band; ``evaluate.protocols.transform``, byte-equal to rvcbench's ``transform_audio``) and the
processed clip is scored against the unprocessed clone it came from (``evaluate.derived``: rvcbench 2.2.1's
``_derived_rows``), with the derived task's own metrics (``suite.protocol``). As in rvcbench, the derived task is a
run of its own in ``tasks/<derived task>/`` (``derived_run``): its journal, the processed clips in
``generated_audio/`` and ``run_manifest.json`` (each processed clip's sha256, the source clip it came from, the
transform record, ``derived_from`` naming the source run); it is then scored like any run, so its per-sample CSV,
``metrics.json``, ``scoring_manifest.json`` (whose ``source_run`` is the derived run itself) and the suite's
results and ``submission.json`` record the processed clips' hashes. Running again re-derives the clips (ffmpeg is
deterministic: the same bytes) and the metric cache, keyed by content, scores nothing twice. ``derived_job`` makes
the run and returns the job that scores it: the suite run and ``clonebench score --suite`` score it in their one
evaluate pass with every other task.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from clonebench.suite.definition import Suite, Task

log = logging.getLogger(__name__)


def transform_of(suite: Suite, task: Task):
    """The task's transform as the transform step reads it (ConfigError naming the suite and task when invalid)."""
    from clonebench.evaluate.protocols.transform import Transform

    spec = {k: v for k, v in dataclasses.asdict(task.transform).items() if v is not None}
    return Transform.from_spec(spec, where=f"suite {suite.name} task {task.name}.transform")


def check_derived_tasks(suite: Suite) -> None:
    """Before any request: every derived task's transform is valid and ffmpeg has its encoders (DependencyError
    naming the encoder and the fix otherwise)."""
    from clonebench.evaluate.protocols.transform import check_ffmpeg

    transforms = [transform_of(suite, task) for task in suite.tasks if task.derived]
    if transforms:
        check_ffmpeg(transforms)


def derived_job(suite: Suite, task: Task, source_run: Path | None, samples: list | None, task_dir: Path,
                evaluation, header: dict):
    """Transform ``source_run``'s generated audio as ``task.transform`` says into ``task_dir``, recorded as the
    derived task's own run (``derived_run.record_derived``); the evaluate job that scores that run with the task's
    protocol (``evaluation``: the suite run's settings), or (None, why there is none).

    ``source_run``: the source task's generation run (None when it was not generated); ``samples``: the source
    task's samples (its input fingerprint is checked against that run's)."""
    from clonebench.evaluate.inputs import load_requested
    from clonebench.evaluate.phase import EvaluationJob
    from clonebench.suite.derived_run import RULE, record_derived
    from clonebench.suite.protocol import protocol_record, task_evaluation

    source = str(task.derived_from)
    if source_run is None or samples is None:
        return None, f"source task {source} was not generated"
    transform = transform_of(suite, task)
    run = record_derived(task_dir, header, task.name, source, source_run, samples, transform)
    # scored like any run: the processed clips (and their hashes) as the derived run recorded them
    requested, record = load_requested(task_dir, run.samples)
    protocol = task_evaluation(evaluation, suite, task)
    job_header = {**header, "task_evaluation": protocol_record(protocol, suite, task),
                  "derived_task": {"derived_from": source, "rule": RULE, "transform": run.transform}}
    log.info("suite %s: derived task %s (%s of %s, %d clips)", suite.name, task.name, transform.describe(), source,
             run.clips)
    return EvaluationJob(task_dir, task_dir, run.samples, job_header, requested=requested,
                         source={**record, "derived_from": run.derived_from}, evaluation=protocol), None

