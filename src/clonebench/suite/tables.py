"""A suite's summary as text: Markdown, LaTeX (booktabs), CSV (long format) and the console table.

One row per task in suite order: status, n valid / n requested, each required metric's mean with its 95 % CI;
then the changes against anchor tasks (upstream's relative change and the paired change, each labelled), the
``group_by`` breakdowns, and coverage with failures per task. Derived tasks without scores are listed with why.
"""

from __future__ import annotations

import csv
import io

from clonebench.report.format import latex_escape, metric_number
from clonebench.suite.results import FAILURE_METRIC, SuiteResults, TaskResult

METRICS = [("sim", "SIM", True), ("speechmos", "MOS", True), ("wer", "WER", False), ("mcd", "MCD", False),
           ("sva", "SVA", True), ("emotion", "EMC", True), ("stoi", "STOI", True), ("dnsmos", "DNSMOS", True)]
# the failure rate (percent, one decimal): a column only when some task's run scored it; never a required metric
FAILURE = (FAILURE_METRIC, "fail%", False)
ARROW = {True: "↑", False: "↓"}


def used_metrics(results: SuiteResults) -> list[tuple[str, str, bool]]:
    wanted = {m for t in results.tasks for m in t.required}
    failures = any(FAILURE_METRIC in t.metrics for t in results.tasks)
    return [m for m in METRICS if m[0] in wanted] + ([FAILURE] if failures else [])


def shows(task: TaskResult, metric: str) -> bool:
    """The task has a cell for ``metric``: a required metric, or the failure rate its run scored."""
    return metric in task.required or (metric == FAILURE_METRIC and metric in task.metrics)


def _num(value: float | None, digits: int = 3, metric: str = "") -> str:
    return "–" if value is None else metric_number(metric, value, digits)


def cell(task: TaskResult, metric: str, with_ci: bool = True) -> str:
    if not shows(task, metric):
        return ""
    stat = task.metrics.get(metric)
    if stat is None or stat.mean is None:
        return "–"
    text = _num(stat.mean, metric=metric)
    if with_ci and stat.ci:
        text += f" [{_num(stat.ci[0], metric=metric)}, {_num(stat.ci[1], metric=metric)}]"
    return text + f" ({stat.n_valid}/{stat.n_requested})"


def status_text(task: TaskResult) -> str:
    return task.status.replace("_", " ") + (f": {task.reason}" if task.reason else "")


def _header(results: SuiteResults) -> list[str]:
    suite = results.suite
    return [f"# {suite.name}: {results.model}", "", f"> {suite.label}", "",
            f"Suite sha256 `{suite.suite_sha256}`; dataset {suite.hf_dataset_id} at revision `{suite.hf_revision}`; "
            f"status **{results.status}**. Cells: mean [95 % CI] (n valid/n requested); – no value; blank: not a "
            "metric of the task.", ""]


def change_rows(results: SuiteResults) -> list[dict]:
    rows = []
    for task in results.tasks:
        changes = task.changes
        if not changes:
            continue
        upstream = changes["upstream_relative_change_percent"] or {}
        for metric in task.required:
            paired = changes["paired"].get(metric)
            if metric not in upstream and paired is None and metric not in results.task(changes["anchor"]).required:
                continue
            rows.append({"task": task.name, "anchor": changes["anchor"], "metric": metric,
                         "upstream_relative_change_percent": upstream.get(metric),
                         "paired_delta": paired and paired["delta"], "paired_delta_ci95": paired and paired["delta_ci95"],
                         "paired_percent": paired and paired["percent"],
                         "paired_percent_ci95": paired and paired["percent_ci95"],
                         "n_pairs": paired and paired["n_pairs"],
                         "note": None if paired else (changes["paired_reason"] or "no shared pair with scores"),
                         "upstream_note": None if changes["upstream_relative_change_percent"] is not None
                         else changes["upstream_reason"]})
    return rows


def _ci(pair) -> str:
    return "" if not pair else f" [{pair[0]:+.3f}, {pair[1]:+.3f}]"


def markdown(results: SuiteResults) -> str:
    metrics = used_metrics(results)
    lines = _header(results)
    lines += ["| task | evaluation | status | " + " | ".join(f"{label} {ARROW[up]}" for _, label, up in metrics) + " |",
              "|---" * (3 + len(metrics)) + "|"]
    for task in results.tasks:
        lines.append(f"| {task.name} | {task.task.evaluation or ''} | {status_text(task)} | "
                     + " | ".join(cell(task, m) for m, _, _ in metrics) + " |")
    changes = change_rows(results)
    if changes:
        lines += ["", "## Change against the anchor task", "",
                  "Upstream: rvcbench's `relative_change` of the two tasks' means (unpaired; complete tasks only). "
                  "Paired: task − anchor over the source pairs both tasks hold, speaker-cluster bootstrap 95 % CI.", "",
                  "| task | anchor | metric | upstream relative change | paired Δ [95 % CI] | paired % [95 % CI] | pairs |",
                  "|---|---|---|---|---|---|---|"]
        for row in changes:
            upstream = "–" if row["upstream_relative_change_percent"] is None else \
                f"{row['upstream_relative_change_percent']:+.1f}%"
            if row["paired_delta"] is None:
                paired, percent = f"– ({row['note']})", "–"
            else:
                paired = f"{row['paired_delta']:+.3f}{_ci(row['paired_delta_ci95'])}"
                percent = "–" if row["paired_percent"] is None else \
                    f"{row['paired_percent']:+.1f}%" + ("" if not row["paired_percent_ci95"] else
                                                        f" [{row['paired_percent_ci95'][0]:+.1f}, "
                                                        f"{row['paired_percent_ci95'][1]:+.1f}]")
            lines.append(f"| {row['task']} | {row['anchor']} | {row['metric']} | {upstream} | {paired} | {percent} | "
                         f"{row['n_pairs'] or '–'} |")
    for task in results.tasks:
        for column, values in task.groups.items():
            lines += ["", f"## {task.name} by {column}", "",
                      f"| {column} | n | " + " | ".join(f"{label} {ARROW[up]}" for m, label, up in metrics
                                                      if m in task.required) + " |",
                      "|---|---|" + "---|" * len(task.required)]
            for value, stats in values.items():
                first = next(iter(stats.values()))
                lines.append(f"| {value or '(none)'} | {first.n_requested} | " + " | ".join(
                    f"{_num(stats[m].mean)}" + (f" [{stats[m].ci[0]:.3f}, {stats[m].ci[1]:.3f}]" if stats[m].ci else "")
                    for m, _, _ in metrics if m in task.required) + " |")
    lines += ["", "## Coverage and failures", "",
              "| task | requested | generated | generation failed | input failed | required metrics valid | status | "
              "failures |", "|---|---|---|---|---|---|---|---|"]
    for task in results.tasks:
        cov = task.coverage or {}
        valid = ", ".join(f"{m} {cov.get('metric_valid', {}).get(m, 0)}" for m in task.required)
        failures = "; ".join(f"{pair}: {error}" for pair, error in list(task.failures.items())[:3])
        more = f" (+{len(task.failures) - 3} more)" if len(task.failures) > 3 else ""
        lines.append(f"| {task.name} | {cov.get('requested', 0)} | {cov.get('generated', 0)} | "
                     f"{cov.get('generation_failed', 0)} | {cov.get('input_failed', 0)} | {valid} | "
                     f"{status_text(task)} | {(failures + more).replace('|', '/') or '–'} |")
    return "\n".join(lines) + "\n"


def latex(results: SuiteResults) -> str:
    metrics = used_metrics(results)
    arrows = {True: r"$\uparrow$", False: r"$\downarrow$"}
    lines = [r"\begin{tabular}{ll" + "c" * len(metrics) + "}", r"\toprule",
             " & ".join(["Task", "Status"] + [f"{latex_escape(label)} {arrows[up]}" for _, label, up in metrics]) + r" \\",
             r"\midrule"]
    for task in results.tasks:
        cells = []
        for metric, _, _ in metrics:
            stat = task.metrics.get(metric)
            if not shows(task, metric):
                cells.append("")
            elif stat is None or stat.mean is None:
                cells.append("--")
            else:
                ci = rf"\,{{\scriptsize[{_num(stat.ci[0], metric=metric)}, {_num(stat.ci[1], metric=metric)}]}}" \
                    if stat.ci else ""
                cells.append(f"{_num(stat.mean, metric=metric)}{ci}")
        lines.append(" & ".join([latex_escape(task.name), latex_escape(task.status.replace("_", " "))] + cells) + r" \\")
    # comment lines: every name and reason escaped, so a newline cannot leave the comment
    suite = results.suite
    lines += [r"\bottomrule", r"\end{tabular}",
              "% " + latex_escape(f"{suite.name}: {results.model}, suite sha256 {suite.suite_sha256}, "
                                  f"{suite.hf_dataset_id} at {suite.hf_revision}; mean with 95 % CI")]
    lines += ["% " + latex_escape(f"{t.name}: {t.reason}") for t in results.tasks if t.reason]
    return "\n".join(lines) + "\n"


CSV_FIELDS = ["task", "evaluation", "status", "metric", "mean", "ci_low", "ci_high", "n_valid", "n_requested",
              "anchor", "upstream_relative_change_percent", "paired_delta", "paired_delta_ci_low",
              "paired_delta_ci_high", "paired_percent", "n_pairs", "group_by", "group", "note"]


def csv_text(results: SuiteResults) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    changes = {(r["task"], r["metric"]): r for r in change_rows(results)}
    for task in results.tasks:
        for metric in (*task.required, *([FAILURE_METRIC] if shows(task, FAILURE_METRIC) else [])):
            stat = task.metrics.get(metric)
            change = changes.get((task.name, metric), {})
            ci = (stat.ci if stat else None) or [None, None]
            delta_ci = change.get("paired_delta_ci95") or [None, None]
            writer.writerow({"task": task.name, "evaluation": task.task.evaluation, "status": task.status,
                             "metric": metric, "mean": stat.mean if stat else None, "ci_low": ci[0], "ci_high": ci[1],
                             "n_valid": stat.n_valid if stat else 0,
                             "n_requested": stat.n_requested if stat else task.coverage.get("requested"),
                             "anchor": task.task.anchor,
                             "upstream_relative_change_percent": change.get("upstream_relative_change_percent"),
                             "paired_delta": change.get("paired_delta"), "paired_delta_ci_low": delta_ci[0],
                             "paired_delta_ci_high": delta_ci[1], "paired_percent": change.get("paired_percent"),
                             "n_pairs": change.get("n_pairs"), "note": task.reason or change.get("note")})
            for column, values in task.groups.items() if metric in task.required else ():
                for value, stats in values.items():
                    group = stats[metric]
                    gci = group.ci or [None, None]
                    writer.writerow({"task": task.name, "evaluation": task.task.evaluation, "status": task.status,
                                     "metric": metric, "mean": group.mean, "ci_low": gci[0], "ci_high": gci[1],
                                     "n_valid": group.n_valid, "n_requested": group.n_requested,
                                     "group_by": column, "group": value})
    return buffer.getvalue()


def console_table(results: SuiteResults) -> str:
    metrics = used_metrics(results)
    lines = [f"suite {results.suite.name} ({results.status}): {results.suite_dir}",
             f"{'task':<26} {'status':<14} " + " ".join(f"{label + ARROW[up]:>16}" for _, label, up in metrics)]
    for task in results.tasks:
        values = []
        for metric, _, _ in metrics:
            stat = task.metrics.get(metric)
            digits = 1 if metric == FAILURE_METRIC else 4
            values.append(f"{'' if not shows(task, metric) else _num(stat.mean if stat else None, digits, metric)}"
                          f"{'' if not stat else f' {stat.n_valid}/{stat.n_requested}'}")
        lines.append(f"{task.name:<26} {task.status.replace('_', ' '):<14} " + " ".join(f"{v:>16}" for v in values))
        if task.reason:
            lines.append(f"{'':<26} {task.reason}")
    return "\n".join(lines)
