"""A suite's derived task (``derived_from`` + ``transform``: core-v1's compression-* and narrowband) scored as a run.

A derived task has no pairs of its own: every generated clip of its source task goes through the transform (a
codec round trip, a telephone band; ``evaluate.transform``, byte-equal to rvcbench's ``transform_audio``) and the
processed clip is scored against the unprocessed clone it came from (``evaluate.derived``: rvcbench 2.2.1's
``_derived_rows``), with the derived task's own metrics (``task_settings``). The result is an evaluated run in
``tasks/<derived task>/`` like any task's: ``scoring_manifest.json`` (its ``source_run`` is the source task's
generation run, so coverage and failures are the source's), the per-sample CSV, ``metrics.json``; the processed
clips sit in its ``generated_audio/``. Running again re-derives the clips (ffmpeg is deterministic: the same bytes)
and the metric cache, keyed by content, scores nothing twice.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path

from clonebench.core.records import AudioRef
from clonebench.suite.definition import Suite, Task

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DerivedOutcome:
    """What became of a derived task: its scored run directory, or why it has none."""

    task: str
    source_task: str
    run_dir: Path | None
    reason: str | None
    status: str | None = None          # the scoring status (complete | partial | failed) when scored


def transform_of(suite: Suite, task: Task):
    """The task's transform as the transform step reads it (ConfigError naming the suite and task when invalid)."""
    from clonebench.evaluate.transform import Transform

    spec = {k: v for k, v in dataclasses.asdict(task.transform).items() if v is not None}
    return Transform.from_spec(spec, where=f"suite {suite.name} task {task.name}.transform")


def check_derived_tasks(suite: Suite) -> None:
    """Before any request: every derived task's transform is valid and ffmpeg has its encoders (DependencyError
    naming the encoder and the fix otherwise)."""
    from clonebench.evaluate.transform import check_ffmpeg

    transforms = [transform_of(suite, task) for task in suite.tasks if task.derived]
    if transforms:
        check_ffmpeg(transforms)


def score_derived_task(suite: Suite, task: Task, source_run: Path | None, samples: list | None, task_dir: Path,
                       settings, header: dict) -> DerivedOutcome:
    """Transform ``source_run``'s generated audio as ``task.transform`` says and score it into ``task_dir``.

    ``source_run``: the source task's generation run (None when it was not generated); ``samples``: the source
    task's samples (its input fingerprint is checked against that run's); ``settings``: the suite run's."""
    from clonebench.evaluate.derived import derive_items
    from clonebench.evaluate.inputs import Requested, load_requested
    from clonebench.evaluate.phase import EvaluationJob, run_evaluations
    from clonebench.evaluate.transform import fingerprint
    from clonebench.suite.protocol import protocol_record, task_evaluation

    source = str(task.derived_from)
    if source_run is None or samples is None:
        return DerivedOutcome(task.name, source, None, f"source task {source} was not generated")
    transform = transform_of(suite, task)
    requested, source_record = load_requested(source_run, samples)
    derived = derive_items(source, transform, {r.sample.sample_id: r.item for r in requested},
                           task_dir / "generated_audio")
    job_requested = []
    for req, item in zip(requested, derived):
        sample = req.sample
        if req.item is not None:  # the derived pair's target is the unprocessed clone (the CSV says so)
            target = AudioRef(f"{source} clone {sample.pair_id}", req.item.generated_sha256, req.item.generated_path)
            sample = dataclasses.replace(sample, target=target)
        job_requested.append(Requested(sample, req.outcome, item.item, req.problem or item.error))
    protocol = task_evaluation(settings.evaluation, suite, task)
    evaluated = dataclasses.replace(settings, evaluation=protocol)
    job_header = {**header, "task_evaluation": protocol_record(protocol, suite, task),
        "derived_task": {"derived_from": source, "rule": "rvcbench 2.2.1 _derived_rows: the processed clone scored "
                         "against the unprocessed clone", "transform": fingerprint(transform)}}
    job = EvaluationJob(task_dir, source_run, samples, job_header, requested=job_requested,
                        source={**source_record, "derived_from": source})
    log.info("suite %s: derived task %s (%s of %s, %d clips)", suite.name, task.name, transform.describe(), source,
             sum(1 for d in derived if d.item is not None))
    metrics = run_evaluations(evaluated, [job])[0]
    return DerivedOutcome(task.name, source, task_dir, None, metrics["status"])
