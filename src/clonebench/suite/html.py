"""The suite section of the HTML report: one row per task, worst first (failed, not generated or partial tasks,
then by SIM ascending; derived tasks without scores last, with the reason), the change against each anchor task
(upstream's and the paired one, labelled), the ``group_by`` breakdowns, coverage and failures. Every text is
escaped. A page of suite runs alone (no per-run views) is written by :func:`write_suite_page`."""

from __future__ import annotations

import math
from html import escape
from pathlib import Path

from clonebench.core.atomic import atomic_write_text
from clonebench.suite.results import SuiteResults, TaskResult
from clonebench.suite.tables import ARROW, cell, change_rows, status_text, used_metrics

RANK = {"failed": 0, "not_generated": 1, "partial": 2, "generated": 3, "complete": 4, "not_scored": 5}
WORST_FIRST = ("worst first: failed, not generated and partial tasks, then by SIM (lowest first); derived tasks "
               "without scores last")


def worst_first(tasks: list[TaskResult]) -> list[TaskResult]:
    def key(task: TaskResult):
        sim = task.metrics.get("sim")
        value = sim.mean if sim is not None and sim.mean is not None else math.inf
        return RANK.get(task.status, 0), value, task.name
    return sorted(tasks, key=key)


def _table(head: list[str], rows: list[list[str]], css: str) -> str:
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>'


def suite_section(results: SuiteResults) -> str:
    suite, metrics = results.suite, used_metrics(results)
    title = f"{suite.name}: {results.model} ({results.status})"
    intro = (f"{suite.label} Suite sha256 {suite.suite_sha256}; dataset {suite.hf_dataset_id} at revision "
             f"{suite.hf_revision}. Cells: mean [95 % CI] (n valid/n requested). Order: {WORST_FIRST}.")
    tasks = _table(["task", "evaluation", "status"] + [f"{label} {ARROW[up]}" for _, label, up in metrics],
                   [[t.name, t.task.evaluation or "", status_text(t)] + [cell(t, m) for m, _, _ in metrics]
                    for t in worst_first(results.tasks)], "suite-tasks")
    parts = [f'<section class="suite"><h2 id="suite-{escape(suite.name)}">Suite {escape(title)}</h2>'
             f"<p>{escape(intro)}</p>{tasks}"]
    changes = change_rows(results)
    if changes:
        def fmt(value, ci=None, percent=False):
            if value is None:
                return "–"
            unit = "%" if percent else ""
            text = f"{value:+.1f}{unit}" if percent else f"{value:+.3f}"
            return text + (f" [{ci[0]:+.{1 if percent else 3}f}, {ci[1]:+.{1 if percent else 3}f}]" if ci else "")
        rows = [[r["task"], r["anchor"], r["metric"], fmt(r["upstream_relative_change_percent"], percent=True),
                 fmt(r["paired_delta"], r["paired_delta_ci95"]) if r["paired_delta"] is not None else f"– ({r['note']})",
                 fmt(r["paired_percent"], r["paired_percent_ci95"], percent=True), str(r["n_pairs"] or "–")]
                for r in changes]
        parts.append("<h3>Change against the anchor task</h3><p>Upstream: rvcbench's relative change of the two "
                     "tasks' means (unpaired, complete tasks only). Paired: task − anchor over the source pairs both "
                     "tasks hold, speaker-cluster bootstrap 95 % CI.</p>" + _table(
                         ["task", "anchor", "metric", "upstream relative change", "paired Δ [95 % CI]",
                          "paired % [95 % CI]", "pairs"], rows, "suite-changes"))
    for task in results.tasks:
        for column, values in task.groups.items():
            shown = [m for m, _, _ in metrics if m in task.required]
            rows = [[value or "(none)", str(next(iter(stats.values())).n_requested)]
                    + [("–" if stats[m].mean is None else f"{stats[m].mean:.3f}")
                       + (f" [{stats[m].ci[0]:.3f}, {stats[m].ci[1]:.3f}]" if stats[m].ci else "") for m in shown]
                    for value, stats in values.items()]
            parts.append(f"<h3>{escape(task.name)} by {escape(column)}</h3>"
                         + _table([column, "n"] + shown, rows, "suite-groups"))
    coverage = [[t.name, str(t.coverage.get("requested", 0)), str(t.coverage.get("generated", 0)),
                 str(t.coverage.get("generation_failed", 0)), str(t.coverage.get("input_failed", 0)),
                 ", ".join(f"{m} {t.coverage.get('metric_valid', {}).get(m, 0)}" for m in t.required),
                 status_text(t), "; ".join(f"{p}: {e}" for p, e in t.failures.items()) or "–"]
                for t in results.tasks]
    parts.append("<h3>Coverage and failures</h3>" + _table(
        ["task", "requested", "generated", "generation failed", "input failed", "required metrics valid", "status",
         "failures"], coverage, "suite-coverage") + "</section>")
    return "".join(parts)


def write_suite_page(rows_html: str, suites: list[SuiteResults], out_dir: Path, css: str) -> Path:
    """A page of suite runs only: the paper table, then each suite's section."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    title = "clonebench report: " + ", ".join(f"{s.suite.name} ({s.model})" for s in suites)
    sections = "".join(suite_section(s) for s in suites)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src 'self'; style-src 'unsafe-inline'">
<title>{escape(title)}</title><style>{css}</style></head>
<body><h1>{escape(title)}</h1>
<h2 id="table">Results</h2>{rows_html}
{sections}
<p>Listen to a task's samples: <code>clonebench report SUITE_DIR/tasks/TASK --format html --output DIR</code>.</p>
</body></html>
"""
    atomic_write_text(out_dir / "index.html", page)
    return out_dir / "index.html"
