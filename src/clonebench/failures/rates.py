"""Failure rates of a run's rows: overall (``fail``) and per flag, each with its Wilson score interval
(``scipy.stats.binomtest(...).proportion_ci(method="wilson")``: unlike a bootstrap of 0/1 values, it does not
collapse to [0, 0] when no clip of a small run failed)."""

from __future__ import annotations

from clonebench.failures.thresholds import FLAGS


def wilson(count: int, n: int, confidence: float) -> list[float] | None:
    if n == 0:
        return None
    from scipy.stats import binomtest

    interval = binomtest(count, n).proportion_ci(confidence_level=confidence, method="wilson")
    return [round(float(interval.low), 6), round(float(interval.high), 6)]


def failure_rates(rows: list[dict], confidence: float = 0.95) -> dict | None:
    """``{"n", "failed", "rate", "ci", "flags": {flag: {"count", "rate", "ci"}}, "ci_method"}`` over the rows that
    have a verdict (``fail`` set); None when none has."""
    judged = [r for r in rows if r.get("fail") in (0.0, 1.0)]
    if not judged:
        return None
    n = len(judged)
    failed = sum(1 for r in judged if r["fail"] == 1.0)
    per_flag = {}
    for flag in FLAGS:
        count = sum(1 for r in judged if flag in str(r.get("failures") or "").split(";"))
        per_flag[flag] = {"count": count, "rate": count / n, "ci": wilson(count, n, confidence)}
    return {"n": n, "failed": failed, "rate": failed / n, "ci": wilson(failed, n, confidence), "flags": per_flag,
            "ci_method": f"Wilson score interval, {confidence:.0%}"}
