"""Percentiles of a sample with percentile-bootstrap intervals over its items (e.g. requests of a serving level).

numpy's default quantile (linear interpolation between order statistics, Hyndman & Fan type 7). A tail
percentile of a few requests is mostly the largest one: the interval says so (with n requests, p99 is only
resolved when n is well above 100)."""

from __future__ import annotations

import numpy as np


def percentile_cis(values: list[float], percentiles: tuple[float, ...], resamples: int, confidence: float,
                   seed: int) -> dict[str, dict]:
    """{"p50": {"value", "ci"}, ...}; ci is None with fewer than two values."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return {f"p{p:g}": {"value": None, "ci": None} for p in percentiles}
    qs = np.asarray(percentiles) / 100.0
    point = np.quantile(data, qs)
    if data.size < 2:
        return {f"p{p:g}": {"value": float(v), "ci": None} for p, v in zip(percentiles, point)}
    rng = np.random.default_rng(seed)
    draws = np.quantile(data[rng.integers(data.size, size=(resamples, data.size))], qs, axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(draws, [tail, 1.0 - tail], axis=1)
    return {f"p{p:g}": {"value": float(v), "ci": [float(lo), float(hi)]}
            for p, v, lo, hi in zip(percentiles, point, low, high)}
