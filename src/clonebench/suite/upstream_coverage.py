"""rvcbench 2.2.1's per-task coverage record and metric validity (``benchmark/artifacts.py``: ``coverage``,
``metric_value_valid``, ``metric_means``), computed from a clonebench task run so that a suite's
``submission.json`` carries the same fields with the same meaning. Written here from upstream's definitions (its
code is not imported at run time); the tests compare against upstream's functions."""

from __future__ import annotations

from clonebench.core.cells import strict_number as _number  # a bool never counts as a number (as upstream)
from clonebench.suite.definition import UPSTREAM_METRICS


def valid(metric: str, value) -> bool:
    """Upstream's ``metric_value_valid`` for a numeric cell: finite; sva/emotion 0 or 1; mcd/wer >= 0; |sim| <= 1."""
    number = _number(value)
    if number is None:
        return False
    if metric in ("sva", "emotion"):
        return number in (0, 1)
    if metric in ("mcd", "wer"):
        return number >= 0
    if metric == "sim":
        return -1.000001 <= number <= 1.000001
    return True


def upstream_values(csv_row: dict) -> dict[str, float]:
    """A clonebench per-sample CSV row's valid values under rvcbench's metric names."""
    out = {}
    for metric, column in UPSTREAM_METRICS.items():
        if valid(metric, csv_row.get(column)):
            out[metric] = float(csv_row[column])
    return out


def coverage(samples: list[dict], rows: list[dict], required, *, evaluated: bool, input_failed: int,
             generated: int | None = None) -> dict:
    """Upstream's ``coverage`` dict: counts of generation statuses and valid values per metric, and the status
    (complete only when every requested sample was generated, evaluated and has every required metric)."""
    requested = len(samples)
    statuses = [s.get("status") for s in samples]
    generated = sum(s == "generated" for s in statuses) if generated is None else generated
    counts = {m: sum(m in r for r in rows) for m in UPSTREAM_METRICS}
    complete = bool(requested) and generated == requested and evaluated and all(counts[m] == requested
                                                                                 for m in required)
    return {"requested": requested, "generated": generated,
            "generation_failed": sum(s == "generation_failed" for s in statuses), "input_failed": input_failed,
            "pending": sum(s == "pending" for s in statuses), "generating": sum(s == "generating" for s in statuses),
            "metric_valid": counts, "required_metrics": list(required),
            "status": "complete" if complete else ("generated" if not evaluated and generated == requested and requested
                                                   else "partial"),
            "eligible_for_comparison": complete}


def metric_means(rows: list[dict], required) -> dict[str, float]:
    """Upstream's ``metric_means``: the plain mean (sum / n) of each required metric over every row; every row
    must have it (upstream raises otherwise; only complete tasks get means)."""
    means = {}
    for metric in required:
        values = [r.get(metric) for r in rows]
        if any(v is None for v in values) or not values:
            raise ValueError(f"Incomplete metric: {metric}")
        means[metric] = sum(values) / len(values)
    return means


def group_means(rows: list[dict], required, groups: dict[str, dict[str, str]], column: str) -> dict:
    """Upstream's ``_group_means``: per value of ``column`` (missing: ""), sorted, the metric means."""
    buckets: dict[str, list[dict]] = {}
    for row in rows:
        buckets.setdefault(groups.get(row["pair_id"], {}).get(column, ""), []).append(row)
    return {value: metric_means(members, required) for value, members in sorted(buckets.items())}


def relative_change(task_means: dict, anchor_means: dict) -> dict[str, float]:
    """Upstream's ``relative_change`` (as in the paper): 100 * (task - anchor) / |anchor| per shared metric; a metric
    whose anchor mean is 0 has none."""
    return {metric: 100.0 * (value - anchor_means[metric]) / abs(anchor_means[metric])
            for metric, value in task_means.items() if metric in anchor_means and anchor_means[metric] not in (0, 0.0)}
