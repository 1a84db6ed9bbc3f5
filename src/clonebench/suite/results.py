"""A suite run's results, read back from its task runs: per task the metric means with 95 % CIs and n valid /
n requested, coverage and failures (rvcbench's fields), ``group_by`` breakdowns, and for tasks with an anchor
both upstream's relative change and clonebench's paired change (``suite.changes``)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from clonebench.core.errors import ClonebenchError
from clonebench.core.runpaths import generation_run
from clonebench.core.untrusted import UntrustedFileError, read_text
from clonebench.generate.journal import (
    MANIFEST_NAME,
    read_record,
    record_problem,
    samples_problem,
)
from clonebench.stats.utterance import bootstrap_ci
from clonebench.suite.definition import UPSTREAM_METRICS, Suite, Task, load_suite
from clonebench.suite.record import SUITE_MANIFEST, TASKS_DIR
from clonebench.suite.upstream_coverage import coverage, upstream_values

# rvcbench's column of each of its metrics in a clonebench per-sample CSV row
CLONEBENCH_COLUMN = UPSTREAM_METRICS
MAX_SAMPLE_METRICS_BYTES = 512 * 1024 * 1024  # a task's generation_sample_metrics.csv larger than this is refused
FAILURE_METRIC = "fail"  # clonebench's failure rate: shown per task when the task's run scored it
_FIX = "restore it (clonebench writes it) or re-run the task"


def _record(path: Path, spec: dict) -> dict:
    """A run record of a task (``read_record``), its keys checked against ``spec`` (key -> accepted types)."""
    record = read_record(path, ClonebenchError, _FIX)
    problem = record_problem(record, spec)
    if problem:
        raise ClonebenchError(f"run record {path}: {problem}; {_FIX}")
    return record


@dataclass
class MetricStat:
    mean: float | None
    ci: list[float] | None
    n_valid: int
    n_requested: int

    def as_dict(self) -> dict:
        return {"mean": self.mean, "ci": self.ci, "n_valid": self.n_valid, "n_requested": self.n_requested}


@dataclass
class TaskResult:
    task: Task
    required: tuple[str, ...]                 # rvcbench metric names
    status: str                               # complete | partial | generated | failed | not_generated | not_scored
    reason: str | None = None                 # why a task has no scores (derived tasks, failed generation)
    run_dir: Path | None = None
    generation_manifest: Path | None = None
    coverage: dict = field(default_factory=dict)
    metrics: dict[str, MetricStat] = field(default_factory=dict)      # rvcbench metric -> stat
    rows: list[dict] = field(default_factory=list)                    # per sample: pair_id, speaker_id, values
    failures: dict[str, str] = field(default_factory=dict)            # pair_id -> generation error
    metric_failures: dict[str, str] = field(default_factory=dict)     # pair_id -> scoring errors
    generated_sha256: dict[str, str | None] = field(default_factory=dict)
    groups: dict[str, dict[str, dict[str, MetricStat]]] = field(default_factory=dict)
    group_values: dict[str, dict[str, str]] = field(default_factory=dict)   # pair_id -> {group_by column: value}
    evaluation_fingerprint: str | None = None
    scorer_fingerprints: dict[str, str] = field(default_factory=dict)
    means: dict[str, float] | None = None     # upstream's task means (complete tasks only; suite.changes)
    group_means: dict | None = None           # upstream's group means (complete tasks with group_by)
    changes: dict | None = None               # vs the anchor: upstream's relative change and the paired change

    @property
    def name(self) -> str:
        return self.task.name

    def status_line(self) -> str:
        return self.status + (f" ({self.reason})" if self.reason else "")


@dataclass
class SuiteResults:
    suite: Suite
    suite_dir: Path
    record: dict
    model: str
    tasks: list[TaskResult]

    @property
    def status(self) -> str:
        scored = [t.status for t in self.tasks]
        if all(s == "complete" for s in scored):
            return "complete"
        if all(s in ("generated", "not_scored") for s in scored) and any(s == "generated" for s in scored):
            return "generated"
        return "partial"

    def task(self, name: str) -> TaskResult:
        return next(t for t in self.tasks if t.name == name)


def _read_scores(path: Path) -> tuple[dict[str, dict], dict[str, str]]:
    """Per pair of a task's sample CSV: its valid values (rvcbench names) and speaker; and its scoring errors.
    Read through core.untrusted (a regular file of at most MAX_SAMPLE_METRICS_BYTES); only what the
    results keep is held past the parse (full-v1 tasks have 2,000 rows of 33 columns)."""
    scores, errors = {}, {}
    try:
        text = read_text(path, max_bytes=MAX_SAMPLE_METRICS_BYTES, follow=False, what="sample metrics")
    except UntrustedFileError as exc:
        raise ClonebenchError(f"{exc}; {_FIX}") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if "pair_id" not in (reader.fieldnames or ()):
        raise ClonebenchError(f"{path}: no pair_id column; {_FIX}")
    try:
        for row in reader:
            row.pop(None, None)  # cells beyond the header (a damaged row) are not a column
            row = {k: "" if v is None else v for k, v in row.items()}
            scores[row["pair_id"]] = {"speaker_id": row.get("speaker_id", ""), **upstream_values(row)}
            if row.get("errors"):
                errors[row["pair_id"]] = row["errors"]
    except csv.Error as exc:
        raise ClonebenchError(f"{path}: not a readable CSV ({exc}); {_FIX}") from None
    return scores, errors


def _stat(values: list[float], n_requested: int, resamples: int, confidence: float, seed: int) -> MetricStat:
    mean = sum(values) / len(values) if values else None
    return MetricStat(mean, bootstrap_ci(values, resamples, confidence, seed), len(values), n_requested)


def _bootstrap(scoring: dict) -> tuple[int, float, int]:
    """The task's bootstrap settings as its scoring manifest records them (the suite pipeline's task_evaluation)."""
    protocol = scoring.get("task_evaluation") or {}
    config = (scoring.get("config") or {}).get("evaluation") or {}
    try:
        if not isinstance(protocol, dict) or not isinstance(config, dict):
            raise TypeError("task_evaluation and config.evaluation must be objects")
        return (int(protocol.get("bootstrap_resamples", config.get("bootstrap_resamples", 1000))),
                float(protocol.get("confidence", config.get("confidence", 0.95))),
                int(protocol.get("bootstrap_seed", config.get("bootstrap_seed", 20260930))))
    except (TypeError, ValueError, OverflowError) as exc:
        raise ClonebenchError(f"scoring_manifest.json: the bootstrap settings (task_evaluation / config.evaluation "
                              f"bootstrap_resamples, confidence, bootstrap_seed) are malformed ({exc}); {_FIX}") from None


def _generation_manifest(task_dir: Path) -> Path | None:
    scoring = task_dir / "scoring_manifest.json"
    if scoring.is_file():
        run_dir = _record(scoring, {"source_run": (dict,), "source_run.run_dir": (str,)}).get("source_run", {}).get(
            "run_dir")
        if not run_dir:
            raise ClonebenchError(f"run record {scoring}: no source_run.run_dir; {_FIX}")
        source = generation_run(task_dir, {"run_dir": run_dir}) / MANIFEST_NAME  # "." or relative: the task's own run
        if source.is_file():
            return source
    return task_dir / MANIFEST_NAME if (task_dir / MANIFEST_NAME).is_file() else None


def read_task(suite: Suite, task: Task, task_dir: Path, groups: dict[str, dict[str, str]]) -> TaskResult:
    """A generated task's result from its run directory (generation manifest, and scores when evaluated)."""
    required = suite.metrics(task)
    result = TaskResult(task, required, "not_generated", run_dir=task_dir, group_values=groups)
    manifest_path = _generation_manifest(task_dir)
    if manifest_path is None:
        result.reason = "no run of this task in the suite directory"
        return result
    result.generation_manifest = manifest_path
    manifest = _record(manifest_path, {"input_failures": (list,), "errors": (list,), "status": (str,)})
    problem = samples_problem(manifest.get("samples"))
    if problem or not all(isinstance(e, str) for e in manifest.get("errors") or []):
        raise ClonebenchError(f"run record {manifest_path}: {problem or 'errors must be a list of strings'}; {_FIX}")
    samples = manifest.get("samples") or []
    result.failures = {s["pair_id"]: s.get("error") or s.get("error_class") or "generation failed"
                       for s in samples if s.get("status") == "generation_failed"}
    result.generated_sha256 = {s["pair_id"]: s.get("audio_sha256") for s in samples}
    evaluated = (task_dir / "metrics.json").is_file()
    scores, errors = _read_scores(task_dir / "generation_sample_metrics.csv") if evaluated else ({}, {})
    result.rows = [{**scores.get(s["pair_id"], {}), "pair_id": s["pair_id"],
                    "speaker_id": s.get("speaker_id") or scores.get(s["pair_id"], {}).get("speaker_id", "")}
                   for s in samples]
    del scores
    result.coverage = coverage(samples, result.rows, required, evaluated=evaluated,
                               input_failed=len(manifest.get("input_failures") or []))
    result.status = result.coverage["status"] if samples else "failed"
    if not evaluated:
        if manifest.get("status") in ("failed", "interrupted"):
            result.reason = f"generation {manifest.get('status')}: {'; '.join(manifest.get('errors') or [])[:300]}"
        return result
    metrics = _record(task_dir / "metrics.json", {"metrics": (dict,), "scorer_fingerprints": (dict,)})
    if not all(isinstance(v, dict) and record_problem(v, {"mean": (int, float), "ci": (list,)}) is None
               for v in (metrics.get("metrics") or {}).values()):
        raise ClonebenchError(f"run record {task_dir / 'metrics.json'}: every entry of 'metrics' must be an object with "
                              f"a numeric mean and a ci list; {_FIX}")
    metrics["metrics"] = metrics.get("metrics") or {}
    scoring = _record(task_dir / "scoring_manifest.json", {"task_evaluation": (dict,), "config": (dict,),
                                                           "config.evaluation": (dict,)})
    result.metric_failures = errors
    result.scorer_fingerprints = metrics.get("scorer_fingerprints") or {}
    resamples, confidence, seed = _bootstrap(scoring)
    result.evaluation_fingerprint = _evaluation_fingerprint(result.scorer_fingerprints, resamples, confidence, seed,
                                                            required)
    for metric in required:
        summary = metrics["metrics"].get(CLONEBENCH_COLUMN[metric], {})
        values = [r[metric] for r in result.rows if r.get(metric) is not None]
        mean = summary.get("mean", sum(values) / len(values) if values else None)  # the run's own (metrics.json)
        result.metrics[metric] = MetricStat(mean if values else None, summary.get("ci"), len(values), len(samples))
    for column in task.group_by:
        per_value: dict[str, list[dict]] = {}
        for row in result.rows:
            per_value.setdefault(groups.get(row["pair_id"], {}).get(column, ""), []).append(row)
        result.groups[column] = {value: {m: _stat([r[m] for r in members if r.get(m) is not None], len(members),
                                                  resamples, confidence, seed) for m in required}
                                 for value, members in sorted(per_value.items())}
    failure = metrics["metrics"].get(FAILURE_METRIC)
    if failure and FAILURE_METRIC not in result.metrics and failure.get("mean") is not None:
        # the failure rate (not an rvcbench metric: never required, nor in coverage or submission.json), when scored
        result.metrics[FAILURE_METRIC] = MetricStat(failure["mean"], failure.get("ci"),
                                                    int(failure.get("n_valid") or 0), len(samples))
    return result


def _evaluation_fingerprint(scorers: dict, resamples: int, confidence: float, seed: int, required) -> str | None:
    from clonebench.data.identity import digest

    if not scorers:
        return None
    return digest({"scorers": scorers, "bootstrap": {"resamples": resamples, "confidence": confidence, "seed": seed},
                   "required_metrics": list(required), "harness": "clonebench"})


def derived_result(suite: Suite, task: Task, entry: dict, source: TaskResult | None, suite_dir: Path) -> TaskResult:
    """A derived task: scored (suite.derived_task) when its run exists, else listed with the reason it is not. Its run
    is ``tasks/<name>`` of the suite folder given (recorded relative to it; an older suite's absolute path is not
    followed, so a moved or copied suite reads its own task)."""
    required = suite.metrics(task)
    run_dir = suite_dir / TASKS_DIR / task.name if entry.get("run_dir") else None
    if run_dir and (run_dir / "metrics.json").is_file():
        result = read_task(suite, task, run_dir, {})
        return result
    requested = source.coverage.get("requested", 0) if source else 0
    result = TaskResult(task, required, "not_scored", reason=entry.get("reason") or "not scored")
    result.coverage = coverage([{}] * requested, [], required, evaluated=False, input_failed=0, generated=0)
    return result


def load_suite_results(suite_dir: Path) -> SuiteResults:
    """Every task of a suite run, in suite order."""
    from clonebench.suite.changes import attach_changes
    from clonebench.suite.rows import task_rows

    suite_dir = Path(suite_dir)
    path = suite_dir / SUITE_MANIFEST
    if not path.is_file():
        raise ClonebenchError(f"{suite_dir}: not a suite run (no {SUITE_MANIFEST}); give a directory written by "
                              "run_vc.py --config-name suite/...")
    fix = f"restore the suite's {SUITE_MANIFEST} (clonebench writes it) or re-run the suite"
    record = read_record(path, ClonebenchError, fix)
    problem = record_problem(record, {"suite": (dict,), "suite.selected_tasks": (list,), "suite_source": (str,),
                                      "tasks": (dict,), "suite_model": (str,), "run_name": (str,)})
    if not problem and not isinstance(record.get("suite"), dict):
        problem = "no 'suite' object"
    if not problem and not isinstance(record.get("suite_source"), str):
        problem = "no 'suite_source'"
    if not problem and not all(isinstance(t, str) for t in record["suite"].get("selected_tasks") or []):
        problem = "'suite.selected_tasks' must be a list of task names"
    if not problem and not all(isinstance(e, dict) and record_problem(e, {"run_dir": (str,), "reason": (str,)}) is None
                               for e in (record.get("tasks") or {}).values()):
        problem = "every entry of 'tasks' must be an object with a string run_dir and reason"
    if problem:
        raise ClonebenchError(f"suite record {path}: {problem}; {fix}")
    record["tasks"] = record.get("tasks") or {}
    selected = record["suite"].get("selected_tasks")
    suite = load_suite(record["suite_source"], selected)
    tasks: dict[str, TaskResult] = {}
    for task in suite.tasks:
        if not task.derived:
            tasks[task.name] = read_task(suite, task, suite_dir / TASKS_DIR / task.name, task_rows(suite, task).groups)
    for task in suite.tasks:
        if task.derived:
            tasks[task.name] = derived_result(suite, task, record["tasks"].get(task.name, {}),
                                              tasks.get(task.derived_from), suite_dir)
    ordered = [tasks[t.name] for t in suite.tasks]
    model = record.get("suite_model") or record.get("run_name") or suite_dir.name
    results = SuiteResults(suite, suite_dir, record, model, ordered)
    attach_changes(results)
    return results
