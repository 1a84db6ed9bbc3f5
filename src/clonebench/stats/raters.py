"""Scores of a listening test with 95 % confidence intervals that account for raters and items.

Data: the kept raters' answers to the test's rating trials (checks and repeats left out), as one raters x items
grid per condition (a system, the natural recordings, the MUSHRA anchor; for CMOS, a pair of systems with the
answer oriented as "second compared with the first"). Every rater rates every item, so each grid is full.

- Mean: over every rating in the grid.
- 95 % CI: two-way ("pigeonhole") bootstrap, Owen (2007), Ann. Appl. Stat. 1(2): each of ``DRAWS`` draws resamples
  the raters with replacement and, independently, the items with replacement, and takes the mean over the
  resampled grid (each rating counted rater multiplicity x item multiplicity times); the CI is the 2.5 and 97.5
  percentiles. It is conservative (the rater x item interaction enters twice). Resampling only ratings, or only
  items, ignores that a rater's ratings (and an item's) are correlated and gives intervals that are too narrow.
- Differences between conditions: every condition uses the same draws, so a difference's CI is paired.
- Paired test: Wilcoxon signed-rank, two-sided (``scipy.stats.wilcoxon``), over items on the per-item means over
  the kept raters (for CMOS: those means against 0); p-values Holm-adjusted within each family of comparisons.
"""

from __future__ import annotations

import numpy as np

from clonebench.stats.holm import holm

DRAWS = 2000
SEED = 20261201


def resample_counts(n_raters: int, n_items: int, draws: int = DRAWS, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """How often each rater and each item is drawn, per bootstrap draw: (draws x raters), (draws x items)."""
    rng = np.random.default_rng(seed)

    def counts(n: int) -> np.ndarray:
        picked = rng.integers(n, size=(draws, n))
        out = np.zeros((draws, n))
        np.add.at(out, (np.arange(draws)[:, None], picked), 1.0)
        return out
    return counts(n_raters), counts(n_items)


def boot_means(grid: np.ndarray, counts: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    raters, items = counts
    return np.einsum("dr,ri,di->d", raters, grid, items) / (grid.shape[0] * grid.shape[1])


def interval(values: np.ndarray) -> list[float]:
    low, high = np.percentile(values, [2.5, 97.5])
    return [float(low), float(high)]


def wilcoxon_p(differences: np.ndarray) -> float:
    from scipy.stats import wilcoxon

    if not np.any(differences != 0):
        return 1.0  # no item differs: no evidence of a difference (wilcoxon refuses all-zero input)
    return float(wilcoxon(differences).pvalue)


def scores(grids: dict[str, np.ndarray], draws: int = DRAWS, seed: int = SEED) -> tuple[list[dict], dict]:
    """Per condition: mean, CI, counts; and the bootstrap draws (for paired differences)."""
    first = next(iter(grids.values()))
    counts = resample_counts(first.shape[0], first.shape[1], draws, seed)
    out, boots = [], {}
    for name, grid in grids.items():
        boots[name] = boot_means(grid, counts)
        out.append({"condition": name, "mean": float(grid.mean()), "ci": interval(boots[name]),
                    "sd": float(grid.std(ddof=1)) if grid.size > 1 else None, "n_ratings": int(grid.size),
                    "n_raters": int(grid.shape[0]), "n_items": int(grid.shape[1])})
    return out, boots


def differences(grids: dict[str, np.ndarray], boots: dict[str, np.ndarray], pairs: list[tuple[str, str]]) -> list[dict]:
    """``b - a`` for each (a, b): mean, paired bootstrap CI, Wilcoxon p over items (raw and Holm)."""
    out = []
    for a, b in pairs:
        per_item = grids[b].mean(axis=0) - grids[a].mean(axis=0)
        out.append({"a": a, "b": b, "delta": float(grids[b].mean() - grids[a].mean()),
                    "ci": interval(boots[b] - boots[a]), "p_wilcoxon": wilcoxon_p(per_item),
                    "n_items": int(per_item.size)})
    for row, adjusted in zip(out, holm([r["p_wilcoxon"] for r in out])):
        row["p_holm"] = adjusted
    return out


def cmos(grids: dict[str, np.ndarray], draws: int = DRAWS, seed: int = SEED) -> list[dict]:
    """Per comparison (grid of oriented answers): CMOS, CI, Wilcoxon p of the per-item means against 0."""
    rows, _ = scores(grids, draws, seed)
    for row in rows:
        row["p_wilcoxon"] = wilcoxon_p(grids[row["condition"]].mean(axis=0))
    for row, adjusted in zip(rows, holm([r["p_wilcoxon"] for r in rows])):
        row["p_holm"] = adjusted
    return rows
