"""How much of a metric is the generation seed: one system generated R >= 2 times with different seeds on the
same n pairs (values ``y[r, i]``), split as a one-way random-effects ANOVA with the pair as the group:

- between-seed variance ``s2_seed = mean_i var_r(y[r, i])`` (ddof 1): how much one pair's score moves when only
  the seed changes;
- between-pair variance ``s2_pair = max(0, var_i(mean_r y[r, i]) - s2_seed / R)``: how much pairs differ once the
  seed noise is averaged out (the ANOVA estimator of the pair component);
- ``seed_share = s2_seed / (s2_seed + s2_pair)``: the part of one score's variance that is seed;
- the spread of the run means: their standard deviation across the R runs (observed), and
  ``sqrt(s2_seed / n)``, the standard deviation of one run's mean that re-seeding alone gives (the seeds of
  different pairs are independent draws).

For a difference ``delta`` between the means of systems A and B (each averaged over its R_A, R_B runs), the
re-seeding-only standard deviation is ``sqrt(s2_A / (n R_A) + s2_B / (n R_B))``; a system without replicates is
taken to have the between-seed variance of the systems that have them (pooled), which the verdict says. The
difference "exceeds re-seeding" when ``|delta|`` is above 1.96 times that (the 95 % range of differences
between re-seeded runs).
"""

from __future__ import annotations

import math

import numpy as np

Z95 = 1.959963984540054


def components(values: np.ndarray) -> dict | None:
    """Seed and pair variance components of ``values`` (R runs x n pairs; pairs with a NaN are dropped)."""
    y = np.asarray(values, dtype=np.float64)
    y = y[:, np.isfinite(y).all(axis=0)]
    runs, pairs = y.shape
    if runs < 2 or pairs < 2:
        return None
    seed_var = float(y.var(axis=0, ddof=1).mean())
    pair_var = max(0.0, float(y.mean(axis=0).var(ddof=1)) - seed_var / runs)
    run_means = y.mean(axis=1)
    total = seed_var + pair_var
    return {"runs": runs, "pairs": pairs, "seed_var": seed_var, "pair_var": pair_var,
            "seed_share": seed_var / total if total > 0 else None,
            "run_means": [float(m) for m in run_means], "run_mean_sd": float(run_means.std(ddof=1)),
            "run_mean_range": float(run_means.max() - run_means.min()),
            "seed_sd_of_mean": math.sqrt(seed_var / pairs)}


def pooled_seed_var(found: dict[str, dict | None]) -> float | None:
    values = [c["seed_var"] for c in found.values() if c]
    return float(np.mean(values)) if values else None


def versus_reseeding(delta: float, n: int, a: tuple[dict | None, int], b: tuple[dict | None, int],
                     pooled: float | None) -> dict | None:
    """Whether ``delta`` (B - A over n pairs) exceeds what re-seeding produces; ``a``/``b``: (components, runs)."""
    if pooled is None or n < 1:
        return None
    assumed = []
    parts = 0.0
    for name, (comp, runs) in (("A", a), ("B", b)):
        var = comp["seed_var"] if comp else pooled
        if not comp:
            assumed.append(name)
        parts += var / (n * max(runs, 1))
    sd = math.sqrt(parts)
    threshold = Z95 * sd
    return {"reseed_sd": sd, "reseed_range95": threshold, "exceeds": abs(delta) > threshold,
            "assumed_pooled_for": assumed,
            "verdict": ("exceeds" if abs(delta) > threshold else "within") + f" what re-seeding alone produces "
                       f"(|delta| {abs(delta):.4g} vs 95 % re-seeding range {threshold:.4g})"
                       + (f"; {' and '.join(assumed)} without replicates: pooled between-seed variance assumed"
                          if assumed else "")}
