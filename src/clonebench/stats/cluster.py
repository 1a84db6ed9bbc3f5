"""Paired statistics for systems scored on the same pairs: speaker-cluster bootstrap, Holm, effect size, wins.

Pairs of one speaker are not independent (a system that clones a voice badly does so on all its pairs), so the
resampling unit is the speaker: each draw picks as many speakers as there are, with replacement, and keeps
all their pairs. The test is a studentized (bootstrap-t) cluster bootstrap, which holds its level better than
the percentile bootstrap when there are few speakers:

- mean ``m`` of the paired differences ``d``; cluster-robust standard error
  ``se = sqrt(G/(G-1) * sum_g (S_g - n_g m)^2) / N`` (``S_g``, ``n_g``: sum and count of speaker g's
  differences; ``G`` speakers, ``N`` pairs);
- each draw b: speaker counts ``c_bg`` (``G`` speakers drawn uniformly with replacement), ``m*_b``, ``se*_b``
  by the same formulas over the drawn speakers, ``T*_b = (m*_b - m) / se*_b``;
- p-value, two-sided: ``(1 + #{|T*_b| >= |m / se|}) / (B + 1)``; confidence interval: ``m -/+ q se`` with ``q``
  the ``confidence`` quantile of ``|T*|`` (an order statistic; symmetric, so the interval excludes 0 exactly when
  p is below ``1 - confidence``, up to the +1's). With very few speakers some draws repeat one speaker only
  (``se* = 0``) and the interval can be unbounded (None): the data cannot bound it.
- ``ci_percentile``: the percentile interval of ``m*`` (the project's other speaker-cluster CIs), used for a
  single system's mean, where no test is made.

Simulated (tests/unit/test_compare_stats.py): with a true difference of 0 the test rejects about 5 % of data
sets from 10 speakers up (fewer: conservative).

numpy has the pieces but no clustered bootstrap-t, and scipy.stats.bootstrap resamples observations, not
clusters: hence this module. Everything is vectorised over leading axes (many simulated data sets at once).
Holm-Bonferroni (stats/holm.py) adjusts a family of p-values; dz (paired Cohen's d) is ``mean(d) / sd(d)``.
"""

from __future__ import annotations

import numpy as np

SEED = 20260930
DRAWS = 4000


def cluster_index(clusters: list[str]) -> tuple[np.ndarray, int]:
    """(index of each pair's cluster in sorted order, number of clusters)."""
    names = sorted(set(map(str, clusters)))
    position = {name: k for k, name in enumerate(names)}
    return np.asarray([position[str(c)] for c in clusters], dtype=np.int64), len(names)


def draw_counts(n_clusters: int, draws: int, seed: int) -> np.ndarray:
    """(draws, G) how often each cluster is picked in each draw (G picks uniformly with replacement)."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(n_clusters, size=(draws, n_clusters))
    flat = (np.arange(draws)[:, None] * n_clusters + picks).ravel()
    return np.bincount(flat, minlength=draws * n_clusters).reshape(draws, n_clusters).astype(np.float64)


def _cluster_sums(values: np.ndarray, index: np.ndarray, n_clusters: int) -> np.ndarray:
    """(..., G) sum of each cluster's values."""
    onehot = np.zeros((len(index), n_clusters))
    onehot[np.arange(len(index)), index] = 1.0
    return values @ onehot


def _se(sums: np.ndarray, sizes: np.ndarray, mean: np.ndarray, total: np.ndarray, n_clusters: int) -> np.ndarray:
    residual = sums - sizes * mean[..., None]
    return np.sqrt(n_clusters / (n_clusters - 1) * (residual ** 2).sum(axis=-1)) / total


def cluster_bootstrap(values, clusters: list[str], *, draws: int = DRAWS, seed: int = SEED,
                      confidence: float = 0.95, counts: np.ndarray | None = None) -> dict:
    """Mean, cluster-robust se, studentized bootstrap CI and two-sided p-value (H0: mean 0) of ``values``
    (shape (..., N): one or many data sets over the same pairs). Arrays for many data sets, floats for one;
    ``ci`` and ``p_value`` are None with fewer than two clusters. ``counts`` reuses ``draw_counts``."""
    x = np.asarray(values, dtype=np.float64)
    index, g = cluster_index(clusters)
    if x.shape[-1] != len(index) or len(index) == 0:
        raise ValueError(f"{x.shape[-1]} values for {len(index)} cluster labels")
    sums = _cluster_sums(x, index, g)
    sizes = np.bincount(index, minlength=g).astype(np.float64)
    total = float(len(index))
    mean = sums.sum(axis=-1) / total
    out = {"mean": mean, "n": len(index), "clusters": g, "draws": draws, "seed": seed, "confidence": confidence}
    if g < 2:
        return _scalars({**out, "se": np.full_like(mean, np.nan), "ci": None, "p_value": None})
    se = _se(sums, sizes, mean, total, g)
    c = draw_counts(g, draws, seed) if counts is None else counts
    draws = out["draws"] = c.shape[0]
    n_star = c @ sizes                                              # (B,)
    s_star = np.einsum("bg,...g->...b", c, sums)                    # (..., B)
    m_star = s_star / n_star
    # sum_g c_bg (S_g - n_g m*)^2 = c.S^2 - 2 m* c.(S n) + m*^2 c.n^2
    ss = (np.einsum("bg,...g->...b", c, sums ** 2) - 2 * m_star * np.einsum("bg,...g->...b", c, sums * sizes)
          + m_star ** 2 * (c @ sizes ** 2))
    se_star = np.sqrt(np.maximum(ss, 0.0) * g / (g - 1)) / n_star
    t_star = _ratio(m_star - mean[..., None], se_star)
    t_obs = _ratio(mean, se)
    exceed = (np.abs(t_star) >= np.abs(t_obs)[..., None] * (1 - 1e-12)).sum(axis=-1)
    p = (1.0 + exceed) / (draws + 1.0)
    q = np.quantile(np.abs(t_star), confidence, axis=-1, method="higher")  # an order statistic: inf-safe
    with np.errstate(invalid="ignore"):
        half = np.where(se > 0, q * se, 0.0)  # inf when too few speakers: the interval is unbounded
    tail = (1.0 - confidence) / 2.0
    percentile = np.moveaxis(np.quantile(m_star, [tail, 1.0 - tail], axis=-1), 0, -1)
    return _scalars({**out, "se": se, "ci": np.stack([mean - half, mean + half], axis=-1), "p_value": p,
                     "ci_percentile": percentile})


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, with 0/0 = 0 and x/0 = +-inf (a draw or data set without spread)."""
    num, den = np.broadcast_arrays(np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den
        return np.where(den > 0, out, np.where(num == 0, 0.0, np.copysign(np.inf, num)))


def _scalars(result: dict) -> dict:
    """Plain floats for one data set; an interval that is not finite (too few speakers) becomes None."""
    if np.ndim(result["mean"]) != 0:
        return result
    out = dict(result)
    for key in ("mean", "se", "p_value"):
        if out[key] is not None:
            out[key] = float(out[key])
    for key in ("ci", "ci_percentile"):
        if out.get(key) is not None:
            out[key] = [float(v) for v in out[key]] if np.isfinite(out[key]).all() else None
    return out


def cohen_dz(differences) -> float | None:
    """Paired Cohen's d (dz): mean difference / its standard deviation (ddof 1); None without spread."""
    d = np.asarray(differences, dtype=np.float64)
    if len(d) < 2:
        return None
    sd = float(np.std(d, ddof=1))
    return float(np.mean(d)) / sd if sd > 0 else None


def wins(a, b, higher_is_better: bool) -> dict[str, int]:
    """Pairs where ``b`` beats ``a``, where ``a`` beats ``b``, and exact ties."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    better = b > a if higher_is_better else b < a
    worse = b < a if higher_is_better else b > a
    return {"b_wins": int(better.sum()), "a_wins": int(worse.sum()), "ties": int((a == b).sum())}
