"""The files a suite run ends with, derived from its task runs (``clonebench suite SUITE_DIR`` writes them again):

    suite_results.json     per task: status, coverage, failures, metrics with CIs, groups, changes vs the anchor
    suite_summary.md|.tex|.csv   the summary tables (suite.tables)
    submission.json        rvcbench 2.2.1's schema (suite.submission), for ``rvcbench compare``
"""

from __future__ import annotations

from pathlib import Path

from clonebench.core.atomic import atomic_write_json, atomic_write_text
from clonebench.suite.results import SuiteResults, TaskResult, load_suite_results
from clonebench.suite.submission import submission
from clonebench.suite.tables import csv_text, latex, markdown

SUMMARY = {"md": "suite_summary.md", "latex": "suite_summary.tex", "csv": "suite_summary.csv"}


def task_json(task: TaskResult) -> dict:
    return {"task": task.name, "evaluation": task.task.evaluation, "dimension": task.task.dimension,
            "status": task.status, "reason": task.reason, "anchor": task.task.anchor,
            "derived_from": task.task.derived_from, "group_by": list(task.task.group_by),
            "required_metrics": list(task.required), "run_dir": str(task.run_dir) if task.run_dir else None,
            "coverage": task.coverage, "failures": task.failures, "metric_failures": task.metric_failures,
            "metrics": {m: s.as_dict() for m, s in task.metrics.items()},
            "groups": {c: {v: {m: s.as_dict() for m, s in stats.items()} for v, stats in values.items()}
                       for c, values in task.groups.items()},
            "means": task.means, "group_means": task.group_means, "changes": task.changes,
            "scorer_fingerprints": task.scorer_fingerprints}


def results_json(results: SuiteResults) -> dict:
    return {"schema": "clonebench.suite_results/v1", "suite": results.suite.record(), "model": results.model,
            "status": results.status, "suite_dir": str(results.suite_dir),
            "tasks": [task_json(t) for t in results.tasks]}


def write_suite_outputs(suite_dir: Path) -> SuiteResults:
    results = load_suite_results(suite_dir)
    suite_dir = Path(suite_dir)
    atomic_write_json(suite_dir / "suite_results.json", results_json(results))
    for render, name in ((markdown, SUMMARY["md"]), (latex, SUMMARY["latex"]), (csv_text, SUMMARY["csv"])):
        atomic_write_text(suite_dir / name, render(results))
    atomic_write_json(suite_dir / "submission.json", submission(results))
    return results
