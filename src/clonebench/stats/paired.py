"""Paired deltas with the speaker-cluster percentile bootstrap of the scoring conventions (docs/statistics.md).

The speakers drawn are the ones ``stats.cluster.draw_counts`` draws from the same seed (same generator, same
stream), but the conventions define each draw's mean as the mean of the drawn speakers' pairs concatenated in
pick order; ``cluster_bootstrap``'s vectorised mean (cluster sums weighted by counts) rounds differently in the
last bits. The historical comparison and the suite anchor changes keep the conventions' numbers exactly, so this
loop stays (tests/unit/test_paired_and_tables.py checks it against an independent reading of the conventions)."""

from __future__ import annotations

import numpy as np

BOOTSTRAP_SEED = 20260930
BOOTSTRAP_DRAWS = 2000


def speaker_cluster_ci(deltas: list[float], speakers: list[str], seed: int = BOOTSTRAP_SEED,
                       draws: int = BOOTSTRAP_DRAWS) -> list[float]:
    """95 % CI of the mean paired delta, resampling speakers (pairs in manifest order).

    speakers = sorted unique ids; each draw picks ``len(speakers)`` speaker indices with
    ``rng.integers(len(speakers), size=len(speakers))``, concatenates those speakers' pair positions
    (manifest order within a speaker) and takes the mean delta; CI = quantile(draws, [0.025, 0.975]).
    A fresh generator per call (per metric).
    """
    unique = sorted(set(speakers))
    positions = {s: [i for i, sp in enumerate(speakers) if sp == s] for s in unique}
    values = np.asarray(deltas, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = np.empty(draws)
    for d in range(draws):
        picked = rng.integers(len(unique), size=len(unique))
        index = [i for k in picked for i in positions[unique[k]]]
        means[d] = values[index].mean()
    low, high = np.quantile(means, [0.025, 0.975])
    return [float(low), float(high)]


def paired_summary(current: list[float], historical: list[float], speakers: list[str]) -> dict:
    deltas = [c - h for c, h in zip(current, historical)]
    return {"n_pairs": len(deltas), "n_speakers": len(set(speakers)),
            "current_mean": float(np.mean(current)), "historical_mean": float(np.mean(historical)),
            "paired_mean_delta": float(np.mean(deltas)), "mean_abs_delta": float(np.mean(np.abs(deltas))),
            "delta_ci95": speaker_cluster_ci(deltas, speakers),
            "ci_method": f"speaker-cluster bootstrap, {BOOTSTRAP_DRAWS} draws, rng seed {BOOTSTRAP_SEED}"}
