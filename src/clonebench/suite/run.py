"""A suite run (``configs/suite/*``): every selected task of an RVCBench suite generated against the configured
adversary and scored with the task's own protocol, each task a resumable run under one suite directory.

    <suite dir>/suite_manifest.json        the suite (name, sha256, HF revision, files), per-task status, origin
    <suite dir>/tasks/<task>/              one run per generated task: run_manifest.json, journal, audio, scores
    <suite dir>/suite_results.{json,md,tex,csv}, submission.json   (clonebench.suite.outputs)

Before any request, every input of every selected task is verified (``suite.inputs``) and every reference
is checked against the length limit and the adversary's reference rule; one error lists every problem. The
reference-check gate runs once, in the first task that sends requests (``SharedGate``). ``vc.resume_from=<suite
dir>`` resumes each task from the newest run of it in that suite's chain; ``+vc.evaluate_only=true
+vc.evaluation.generated_audio_dir=<suite dir>`` scores a generated suite into a new one (a folder of WAVs made
outside clonebench instead is checked and recorded per task: ``external.score_suite.ExternalSuiteFolder``). Every task is
generated (and every derived task made) first; then all are scored in one evaluate pass, each with its task's
protocol, each scorer loaded once for the tasks whose protocols configure it alike.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from clonebench.config.settings import RunSettings
from clonebench.core.atomic import atomic_write_text
from clonebench.core.errors import ConfigError
from clonebench.core.records import RunStatus
from clonebench.core.runpaths import recorded
from clonebench.data.audio_cache import AudioCheckCache
from clonebench.data.reference_length import check_reference_lengths
from clonebench.generate.journal import MANIFEST_NAME
from clonebench.suite.definition import Suite, load_suite
from clonebench.suite.inputs import SuiteInputError, TaskSamples, check_suite_inputs, task_samples
from clonebench.suite.record import SUITE_MANIFEST, TASKS_DIR, SuiteRecord, task_header, task_origins

# Given by the caller (runs/pipeline.py passes external.score_suite.external_folder): for an evaluate-only suite run
# on a folder of WAVs made outside clonebench, an object whose ``record(task, task_dir, header)`` records the
# folder's files of one task as that task's run; None when the run is not one. The suite room does not import the
# external room: it receives the audio source.
ExternalSource = Callable[[RunSettings, Suite, "SuiteRecord"], Any]

log = logging.getLogger("clonebench")
INPUT_PROBLEMS = "input_problems.txt"


@dataclass
class SuiteRunResult:
    suite_dir: Path
    status: str                                  # complete | partial | generated | failed
    tasks: dict[str, dict] = field(default_factory=dict)
    summary: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("complete", "generated")


def _refuse_unsupported(settings: RunSettings) -> None:
    if settings.client.max_samples is not None:
        raise ConfigError("adversary.max_samples narrows pairs, but a suite's tasks are frozen selections: narrow "
                          "with suite.tasks=[...] instead (or remove adversary.max_samples)")
    if settings.vc.shard_count != 1:
        raise ConfigError("vc.shard.* is not supported for suite runs; use adversary.endpoint_urls to spread the "
                          "requests over several servers")


def _reference_check(settings: RunSettings):
    """A check of one task's references against the length limit and the adversary's rule (before any request)."""
    from clonebench.adversary.registry import adversary_class
    from clonebench.generate.readiness import check_reference_durations

    adversary = adversary_class(settings.client.protocol)(settings.client, settings.adversary_params)

    def check(ts: TaskSamples) -> None:
        check_reference_lengths(ts.samples, settings.client.max_reference_seconds, ts.label)
        check_reference_durations(ts.samples, adversary)
    return check


def run_suite(settings: RunSettings, suite_dir: Path, header: dict,
              external_source: ExternalSource | None = None) -> SuiteRunResult:
    from clonebench.generate.run_lock import RunLocks

    assert settings.suite is not None
    suite = load_suite(settings.suite.name, settings.suite.tasks)
    _refuse_unsupported(settings)
    suite_dir.mkdir(parents=True, exist_ok=True)
    locks = RunLocks()
    locks.own(suite_dir)
    origin = settings.vc.resume_from
    if origin is not None and os.path.realpath(origin) == os.path.realpath(suite_dir):
        locks.release()
        raise ConfigError(f"vc.resume_from={origin} is this run's own directory; a resume writes a new suite run")
    name = settings.suite.name  # a suite given by path is recorded absolute: reports reload it from anywhere
    source = str(Path(name).resolve()) if "/" in name or name.endswith(".json") else name
    try:
        with SuiteRecord(suite_dir, header, suite, source, origin, settings.suite.model or settings.run_name) as record:
            result = _run(settings, suite, suite_dir, header, record, external_source)
            record.finish(result.status)
            return result
    finally:
        locks.release()


def _check_inputs(settings: RunSettings, suite: Suite, suite_dir: Path) -> list[str]:
    """Every input of every task verified, and (when generating) every reference checked, before any request; the
    tasks to run. One task's samples are in memory at a time: each task is loaded again when it runs (unchanged
    files are then known from the hash cache, not read again)."""
    checked = AudioCheckCache(settings.hash_cache)
    try:
        check = None if settings.vc.evaluate_only else _reference_check(settings)
        return list(check_suite_inputs(suite, settings.dataset.root_path, settings.seed, checked, check))
    except SuiteInputError as exc:
        atomic_write_text(suite_dir / INPUT_PROBLEMS, exc.listing())
        raise
    finally:
        checked.close()


def _source_run(settings: RunSettings, name: str) -> Path | None:
    """evaluate_only: the task's run in the generated suite given as vc.evaluation.generated_audio_dir."""
    given = settings.evaluation.generated_audio_dir
    if given is None:
        raise ConfigError("+vc.evaluate_only=true on a suite needs +vc.evaluation.generated_audio_dir=<suite dir> (a "
                          "generated suite run)")
    if not (Path(given) / SUITE_MANIFEST).is_file():
        raise ConfigError(f"vc.evaluation.generated_audio_dir={given}: not a suite run (no {SUITE_MANIFEST})")
    run = Path(given) / TASKS_DIR / name
    return run if (run / MANIFEST_NAME).is_file() else None


def _run(settings: RunSettings, suite: Suite, suite_dir: Path, header: dict, record: SuiteRecord,
         external_source: ExternalSource | None) -> SuiteRunResult:
    from clonebench.generate.phase import SharedGate
    from clonebench.suite.derived_task import check_derived_tasks
    from clonebench.suite.outputs import write_suite_outputs
    from clonebench.suite.protocol import task_evaluation
    from clonebench.suite.tables import console_table

    for task in suite.tasks:
        task_evaluation(settings.evaluation, suite, task)  # a protocol clonebench cannot score fails now
    score = not settings.vc.generate_only and settings.client.measure == "quality"
    if score:
        check_derived_tasks(suite)  # a bad transform or a missing encoder, before any request
    names = _check_inputs(settings, suite, suite_dir)
    # evaluate_only on a folder of WAVs made elsewhere: the caller's source checks and records it per task
    external = external_source(settings, suite, record) if external_source is not None else None
    origins = task_origins(settings.vc.resume_from, names)
    done: set[str] = set()
    jobs: list = []  # (task, EvaluationJob): every task scored in one pass once all are generated
    # opened after the check pass committed what it validated: each task's files are then known, not read again
    checked = AudioCheckCache(settings.hash_cache) if settings.hash_cache else None
    run = _SuiteRun(settings, suite, suite_dir, header, record, origins, SharedGate(), score, checked, external)
    try:
        for name in names:
            source, samples, job = _run_task(run, name)
            jobs += [(name, job)] if job is not None else []
            for task in suite.tasks:  # its derived tasks now, while its samples are at hand
                if task.derived and task.derived_from == name:
                    jobs += _derived(run, task, source, samples)
                    done.add(task.name)
    finally:
        if checked is not None:
            checked.close()
    for task in suite.tasks:
        if task.derived and task.name not in done:
            jobs += _derived(run, task, None, None)
    _score(run, jobs)
    results = write_suite_outputs(suite_dir)
    return SuiteRunResult(suite_dir, results.status, {t.name: t.status_line() for t in results.tasks},
                          console_table(results))


@dataclass(frozen=True)
class _SuiteRun:
    """What every task of one suite run shares."""

    settings: RunSettings
    suite: Suite
    suite_dir: Path
    header: dict
    record: SuiteRecord
    origins: dict[str, Path]                 # per task, the run it resumes (vc.resume_from's chain)
    gate: Any                                # generate.phase.SharedGate: one reference gate for every task
    score: bool                              # not generate-only and not a timing run
    checked: AudioCheckCache | None          # input files already validated
    external: Any = None                     # evaluate_only on a folder made outside clonebench (ExternalSource)


def _derived(run: _SuiteRun, task, source: Path | None, samples: list | None) -> list:
    """One derived task made from its source task's generated audio as a run of its own: [(task, its scoring
    job)], or [] with the reason recorded."""
    from clonebench.suite.derived_task import derived_job

    if not run.score:
        run.record.task(task.name, derived_from=task.derived_from, run_dir=None,
                        reason="not scored: generate-only or timing run (derived tasks are made at scoring time)")
        return []
    task_dir = run.suite_dir / TASKS_DIR / task.name
    job, reason = derived_job(run.suite, task, source, samples, task_dir, run.settings.evaluation,
                              task_header(run.header, run.suite, task.name, None))
    run.record.task(task.name, derived_from=task.derived_from, reason=reason,
                    run_dir=recorded(run.suite_dir, task_dir) if job is not None else None)  # tasks/<name>
    return [(task.name, job)] if job is not None else []


def _score(run: _SuiteRun, jobs: list) -> None:
    """Every task's job in one evaluate pass (each scorer loaded once for the tasks whose protocols configure it
    alike, the CPU pool started once); each task's outcome in the suite record."""
    from clonebench.evaluate.phase import run_evaluations

    if not jobs:
        return
    for (name, _), metrics in zip(jobs, run_evaluations(run.settings, [job for _, job in jobs])):
        run.record.task(name, evaluation=metrics["status"], reasons=metrics["reasons"][:20])


def _run_task(run: _SuiteRun, name: str) -> tuple[Path | None, list, object]:
    """Generate one task (unless evaluate_only); its generation run (if any), its samples and the job that scores
    it (None when generate-only or nothing was generated). ``run.external``: evaluate_only on a folder made
    outside clonebench (``external.score_suite``)."""
    from clonebench.evaluate.phase import EvaluationJob
    from clonebench.generate.phase import run_generation
    from clonebench.suite.protocol import protocol_record, task_evaluation

    settings, suite, suite_dir, header, record = run.settings, run.suite, run.suite_dir, run.header, run.record
    origins, gate, score, checked, external = run.origins, run.gate, run.score, run.checked, run.external

    ts = task_samples(suite, suite.task(name), settings.dataset.root_path, settings.seed, checked)
    task_dir = suite_dir / TASKS_DIR / name
    theader = task_header(header, suite, name, origins.get(name))
    if settings.vc.evaluate_only and external is not None:
        source = external.record(name, task_dir, theader)
        record.task(name, generation_source=f"external folder {settings.evaluation.generated_audio_dir}")
    elif settings.vc.evaluate_only:
        source = _source_run(settings, name)
        record.task(name, generation_source=str(source) if source else None)
    else:
        task_settings = dataclasses.replace(settings, vc=dataclasses.replace(settings.vc,
                                                                               resume_from=origins.get(name)))
        log.info("suite %s: task %s (%d pairs)", suite.name, name, len(ts.samples))
        recorder = run_generation(task_settings, task_dir, theader, samples=ts.samples, label=ts.label, gate=gate)
        record.task(name, generation=recorder.status.value, counts=recorder.counts(),
                    resumed_from=str(origins[name]) if name in origins else None)
        source = task_dir if recorder.status in (RunStatus.GENERATED, RunStatus.PARTIAL) else None
    if not score or source is None:
        return source, ts.samples, None
    protocol = task_evaluation(settings.evaluation, suite, ts.task)
    return source, ts.samples, EvaluationJob(
        task_dir, source, ts.samples, {**theader, "task_evaluation": protocol_record(protocol, suite, ts.task)},
        evaluation=protocol)
