"""Folders of WAVs made outside clonebench for an rvcbench suite -> one suite run per model, scored task by task
with each task's own protocol: ``clonebench score --suite S --generated DIR [...]`` (rvcbench's ``score``).

Each model's output folder (``OUT``, or ``OUT/<model>`` with several) is a suite run that ``clonebench suite``,
``status``, ``report`` and ``rvcbench compare`` read, plus what every ``clonebench score`` output has:

    score_request.json, submission_check.json, score.json     (clonebench.external.score_folders)
    suite_manifest.json                                        the suite record, per-task state, origin "external"
    tasks/<task>/                                              the task's folder recorded as a generation run
                                                               (generation.external) and scored in place
    tasks/<derived task>/                                      its source task's clips transformed and scored
    suite_results.*, suite_summary.*, submission.json          (suite.outputs)

The folder holds ``<task>__<pair_id>.wav`` (or ``<task>/<pair_id>.wav``) for every pair of every generated task
(``clonebench prompts --suite``); derived tasks (codec, narrowband) need no file. Every problem of every folder
is found before anything is written (``external.score_folders.plan``). Each model's derived tasks are made from its recorded
source task first; then every model's and task's job, each with its task's protocol (metrics, WER normalisation,
seed, bootstrap: ``suite.protocol``), is scored in one evaluate pass: each scorer loads once for all the jobs whose
protocols configure it alike (``evaluate.phase``), and the CPU pool starts once. ``--resume`` as for a manifest: same request (suite, selection, data root,
folder, scorer settings), every file checked again, unchanged audio a metric-cache hit.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from contextlib import ExitStack
from pathlib import Path

from clonebench.core.errors import ClonebenchError
from clonebench.core.runpaths import recorded
from clonebench.data.identity import digest
from clonebench.evaluate.phase import EvaluationJob, run_evaluations
from clonebench.external.pair_sets import PairSet
from clonebench.external.record import record_external
from clonebench.external.score_folders import System, open_outputs, request_record, task_summary, write_summary
from clonebench.suite.definition import Suite
from clonebench.suite.record import TASKS_DIR, SuiteRecord, task_header

log = logging.getLogger(__name__)


@dataclasses.dataclass
class _Job:
    system: int
    task: str
    job: EvaluationJob        # its ``evaluation`` is the task's protocol


def check_protocols(settings, suite: Suite) -> None:
    """Before anything is written: every task's protocol is one clonebench scores, and the derived tasks'
    transforms and ffmpeg encoders exist (ConfigError / DependencyError naming the suite, task and fix)."""
    from clonebench.suite.derived_task import check_derived_tasks
    from clonebench.suite.protocol import task_evaluation

    for task in suite.tasks:
        task_evaluation(settings.evaluation, suite, task)
    check_derived_tasks(suite)


def _record(k: int, system: System, header: dict, suite: Suite, source: str, pair_sets: list[PairSet],
            request: dict, settings) -> tuple[SuiteRecord, list[_Job]]:
    """Write the system's suite run: its record and each generated task's folder as a run; the scoring jobs."""
    from clonebench.suite.protocol import protocol_record, task_evaluation

    run_header = {**header, "run_name": system.model, "request_sha256": digest(request)}
    record = SuiteRecord(system.out_dir, run_header, suite, source, None, system.model)
    record.payload["generated_outside"] = str(system.folder.resolve())
    jobs = []
    for pair_set, check in zip(pair_sets, system.checks):
        task = suite.task(pair_set.task)
        task_dir = system.out_dir / TASKS_DIR / task.name
        theader = task_header(run_header, suite, task.name, None)
        recorder = record_external(task_dir, theader, pair_set, check)
        record.task(task.name, generation=recorder.status.value, counts=recorder.counts(), check=check.counts(),
                    generation_source="external folder " + str(check.folder))
        if not check.usable():
            record.task(task.name, evaluation=None, reason=f"no usable file for task {task.name} in {check.folder}")
            continue
        protocol = task_evaluation(settings.evaluation, suite, task)
        job_header = {**theader, "task_evaluation": protocol_record(protocol, suite, task)}
        jobs.append(_Job(k, task.name, EvaluationJob(task_dir, task_dir, list(pair_set.samples), job_header,
                                                     evaluation=protocol)))
    return record, jobs


class ExternalSuiteFolder:
    """``run_vc.py --config-name suite/... +vc.evaluate_only=true +vc.evaluation.generated_audio_dir=FOLDER`` where
    FOLDER is a folder of WAVs made outside clonebench (not a suite run): checked against every task before any
    scoring (every problem logged per id), then each task's files recorded as that task's run (``record``)."""

    def __init__(self, settings, suite: Suite, record: SuiteRecord):
        from clonebench.external.pair_sets import from_suite
        from clonebench.external.score_folders import check_folders, tally_parts

        folder = settings.evaluation.generated_audio_dir
        self.pair_sets = {p.task: p for p in from_suite(suite, settings.suite.name, settings.dataset.root_path,
                                                        settings.seed)}
        try:
            checks = check_folders(list(self.pair_sets.values()), folder, settings.evaluation.max_clip_seconds)
        except ClonebenchError as exc:
            raise ClonebenchError(f"vc.evaluation.generated_audio_dir={folder} is no suite run (no suite_manifest.json "
                                  f"in it), so it was read as a folder made outside clonebench, and: {exc}") from None
        self.checks = {c.task: c for c in checks}
        for check in checks:
            log.info("task %s: %s", check.task, ", ".join(tally_parts(check)))
            for line in check.lines():
                log.warning("%s", line)
        record.payload["generated_outside"] = str(Path(folder).resolve())

    def record(self, name: str, task_dir: Path, header: dict) -> Path | None:
        """The task's files recorded as its run in ``task_dir``; that run, or None when no file is usable."""
        check = self.checks[name]
        record_external(task_dir, {**header, "phase": "external+evaluate"}, self.pair_sets[name], check)
        return task_dir if check.usable() else None


def external_folder(settings, suite: Suite, record: SuiteRecord) -> ExternalSuiteFolder | None:
    """The folder to score when a suite run is evaluate-only on a folder of WAVs made elsewhere; else None."""
    from clonebench.evaluate.inputs import is_external_folder
    from clonebench.suite.record import is_suite_dir

    given = settings.evaluation.generated_audio_dir
    if not settings.vc.evaluate_only or given is None or is_suite_dir(given) or not is_external_folder(given):
        return None
    return ExternalSuiteFolder(settings, suite, record)


def _score(settings, jobs: list[_Job]) -> dict[tuple[int, str], dict]:
    """Every job (every model, every task, derived tasks too) in one evaluate pass: each scorer loads once for all
    the tasks whose protocols configure it alike, the CPU pool starts once."""
    return {(job.system, job.task): metrics
            for job, metrics in zip(jobs, run_evaluations(settings, [j.job for j in jobs]))} if jobs else {}


def _derived_jobs(k: int, settings, suite: Suite, system: System, record: SuiteRecord, pair_sets: list[PairSet],
                  header: dict) -> list[_Job]:
    """Each derived task made from the system's recorded source clips as a run of its own (before any scoring:
    it needs the clips, not their scores); the jobs that score them."""
    from clonebench.suite.derived_task import derived_job

    sets = {p.task: p for p in pair_sets}
    usable = {c.task for c in system.checks if c.usable()}
    jobs = []
    for task in suite.tasks:
        if not task.derived:
            continue
        source_dir = system.out_dir / TASKS_DIR / str(task.derived_from)
        source_set = sets.get(str(task.derived_from))
        job, reason = derived_job(suite, task, source_dir if task.derived_from in usable else None,
                                  list(source_set.samples) if source_set else None,
                                  system.out_dir / TASKS_DIR / task.name, settings.evaluation,
                                  task_header(header, suite, task.name, None))
        record.task(task.name, derived_from=str(task.derived_from), reason=reason,
                    run_dir=recorded(system.out_dir, job.run_dir) if job else None)  # tasks/<name>
        if job is not None:
            jobs.append(_Job(k, task.name, job))
    return jobs


def _summary(system: System, suite: Suite, pair_sets: list[PairSet], results) -> dict:
    checks = {p.task: c for p, c in zip(pair_sets, system.checks)}
    tasks = {}
    for task in suite.tasks:
        metrics = system.out_dir / TASKS_DIR / task.name / "metrics.json"
        result = json.loads(metrics.read_text(encoding="utf-8")) if metrics.is_file() else None
        tasks[task.name] = task_summary(f"{TASKS_DIR}/{task.name}", result, checks.get(task.name))
    return write_summary(system, tasks, suite=suite.upstream_record(), suite_status=results.status,
                         submission="submission.json")


def score_suite_systems(settings, header: dict, suite: Suite, source: str, pair_sets: list[PairSet],
                        systems: list[System], resume: bool, scoring_config: dict) -> list[dict]:
    """Record every system's folder as a suite run and score it; ``score.json`` summaries, in order."""
    from clonebench.suite.outputs import write_suite_outputs

    check_protocols(settings, suite)
    requests = [request_record(s, pair_sets, scoring_config) for s in systems]
    records: list[SuiteRecord] = []
    with open_outputs(systems, requests, resume), ExitStack() as stack:
        jobs = []
        for k, (system, request) in enumerate(zip(systems, requests)):
            record, system_jobs = _record(k, system, header, suite, source, pair_sets, request, settings)
            records.append(stack.enter_context(record))  # failed/interrupted recorded on the way out
            jobs += system_jobs + _derived_jobs(k, settings, suite, system, record, pair_sets,
                                                {**header, "run_name": system.model})
        scored = _score(settings, jobs)
        summaries = []
        for k, (system, record) in enumerate(zip(systems, records)):
            for task in suite.tasks:
                if (k, task.name) in scored:
                    metrics = scored[(k, task.name)]
                    record.task(task.name, evaluation=metrics["status"], reasons=metrics["reasons"][:20])
            results = write_suite_outputs(system.out_dir)
            record.finish(results.status)
            summaries.append(_summary(system, suite, pair_sets, results))
        return summaries
