"""An arena ranking of N systems from pairwise preferences (A better, B better, about the same).

Data: per kept rater and item, the answers to the arena's rating trials, as score matrices ``S[r, i]`` (K x K):
``S[r, i][a, b]`` is what system ``a`` scored against ``b`` (1 per win; a tie, "about the same", counts half a
win each way). Checks and repeats are left out.

- Bradley-Terry strengths (P(a beats b) = 1 / (1 + exp(-(theta_a - theta_b)))), fitted with ``choix``'s
  maximum-likelihood ILSR (``choix.ilsr_pairwise_dense``) on the summed score matrix, with a tiny regularisation
  (``ALPHA``: a draw where a system never wins stays finite). Ties as half a win each way: the model is then
  fitted to each pair's expected score (a quasi-likelihood; exact when a tie is as informative as half a win,
  and the ranking it gives is the one of the win rates with ties split). Strengths are centred (mean 0) and also
  given on the Elo scale of public arenas: ``1000 + 400 / ln(10) * theta``.
- 95 % CIs: two-way ("pigeonhole") bootstrap over raters x items as in :mod:`clonebench.stats.raters` (same
  resampling counts): each draw sums the score matrices weighted by rater multiplicity x item multiplicity and
  refits; percentile intervals of each strength, each difference of strengths, and each system's rank.
- Win-rate matrix: ``(wins + ties / 2) / comparisons`` for each pair, beside the raw win and tie counts.
- Elo, for comparison with public arenas: online updates in the order of the comparisons, K = ``ELO_K`` (4, as
  Chatbot Arena), scale 400, base 10, every system starting at 1000, a tie scoring 0.5; online Elo depends on the
  order, so it is averaged over ``ELO_ORDERS`` random orders (seeded).
"""

from __future__ import annotations

import numpy as np

from clonebench.core.errors import ClonebenchError
from clonebench.stats.raters import DRAWS, SEED, interval, resample_counts

ALPHA = 0.01              # choix ILSR regularisation (pseudo-comparisons): keeps a no-win draw finite
TOL = 1e-6                # ILSR stops when the strengths move less than this (then accurate to ~1e-8)
ELO_K, ELO_SCALE, ELO_BASE, ELO_INITIAL, ELO_ORDERS = 4.0, 400.0, 10.0, 1000.0, 100
BT_TO_ELO = ELO_SCALE / np.log(ELO_BASE)


def score_matrices(comparisons: list[tuple[int, int, int, int, float]], n_raters: int, n_items: int,
                   n_systems: int) -> np.ndarray:
    """``(rater, item, a, b, score of a against b: 1, 0.5 or 0)`` -> raters x items x K x K score matrices."""
    out = np.zeros((n_raters, n_items, n_systems, n_systems))
    for rater, item, a, b, score in comparisons:
        out[rater, item, a, b] += score
        out[rater, item, b, a] += 1.0 - score
    return out


def counts(comparisons: list[tuple[int, int, int, int, float]], n_systems: int) -> dict[str, np.ndarray]:
    """Raw counts: ``wins[a, b]`` (a beat b), ``ties[a, b]`` (symmetric), ``n[a, b]`` comparisons, and
    ``rate[a, b] = (wins + ties / 2) / n`` (NaN where a pair was never compared and on the diagonal)."""
    wins, ties = np.zeros((n_systems, n_systems)), np.zeros((n_systems, n_systems))
    for _, _, a, b, score in comparisons:
        if score == 0.5:
            ties[a, b] += 1
            ties[b, a] += 1
        elif score == 1:
            wins[a, b] += 1
        else:
            wins[b, a] += 1
    n = wins + wins.T + ties
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(n > 0, (wins + ties / 2) / np.where(n > 0, n, 1), np.nan)
    return {"wins": wins, "ties": ties, "n": n, "rate": rate}


def fit(matrix: np.ndarray, initial: np.ndarray | None = None) -> np.ndarray:
    """Bradley-Terry strengths (natural-log scale, mean 0) of a K x K score matrix, by choix."""
    try:
        import choix
    except ImportError:
        raise ClonebenchError("an arena test's ranking needs choix: pip install 'clonebench[listening]' "
                              "(choix==0.4.1)") from None
    theta = choix.ilsr_pairwise_dense(np.asarray(matrix, dtype=float), alpha=ALPHA, initial_params=initial,
                                      max_iter=500, tol=TOL)
    return theta - theta.mean()


def ranks(theta: np.ndarray) -> np.ndarray:
    """Rank of each system (1 = strongest), along the last axis."""
    order = np.argsort(-theta, axis=-1, kind="stable")
    out = np.empty_like(order)
    np.put_along_axis(out, order, np.arange(1, theta.shape[-1] + 1), axis=-1)
    return out


def bootstrap(scores: np.ndarray, draws: int = DRAWS, seed: int = SEED, point: np.ndarray | None = None) -> np.ndarray:
    """draws x K refitted strengths, raters and items resampled independently (two-way bootstrap)."""
    rater_counts, item_counts = resample_counts(scores.shape[0], scores.shape[1], draws, seed)
    summed = np.einsum("dr,rikl,di->dkl", rater_counts, scores, item_counts)
    start = fit(scores.sum(axis=(0, 1))) if point is None else point
    return np.array([fit(m, start) for m in summed])


def elo(comparisons: list[tuple[int, int, int, int, float]], n_systems: int, k: float = ELO_K,
        orders: int = ELO_ORDERS, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """Online Elo ratings averaged over ``orders`` random orders of the comparisons: (mean, sd over orders)."""
    a = np.array([c[2] for c in comparisons], dtype=int)
    b = np.array([c[3] for c in comparisons], dtype=int)
    s = np.array([c[4] for c in comparisons], dtype=float)
    rng = np.random.default_rng(seed)
    perms = np.array([rng.permutation(len(s)) for _ in range(orders)]).reshape(orders, len(s))
    ratings = np.full((orders, n_systems), ELO_INITIAL)
    rows = np.arange(orders)
    for step in range(len(s)):
        idx = perms[:, step]
        ia, ib = a[idx], b[idx]
        expected = 1.0 / (1.0 + ELO_BASE ** ((ratings[rows, ib] - ratings[rows, ia]) / ELO_SCALE))
        change = k * (s[idx] - expected)
        ratings[rows, ia] += change
        ratings[rows, ib] -= change
    return ratings.mean(axis=0), ratings.std(axis=0)


def ranking(scores: np.ndarray, comparisons: list[tuple[int, int, int, int, float]], names: list[str],
            draws: int = DRAWS, seed: int = SEED) -> dict:
    """Everything the results report: per system strength, CI, rank and its CI, Elo; differences; win rates."""
    point = fit(scores.sum(axis=(0, 1)))
    boots = bootstrap(scores, draws, seed, point)
    boot_ranks = ranks(boots)
    point_ranks = ranks(point)
    elo_mean, elo_sd = elo(comparisons, len(names), seed=seed)
    table = counts(comparisons, len(names))
    systems = []
    for k, name in enumerate(names):
        low, high = interval(boot_ranks[:, k])
        systems.append({"condition": name, "rank": int(point_ranks[k]),
                        "rank_ci": [int(np.floor(low)), int(np.ceil(high))],
                        "strength": float(point[k]), "ci": interval(boots[:, k]),
                        "bt_elo": float(ELO_INITIAL + BT_TO_ELO * point[k]),
                        "bt_elo_ci": [float(ELO_INITIAL + BT_TO_ELO * v) for v in interval(boots[:, k])],
                        "elo": float(elo_mean[k]), "elo_sd_over_orders": float(elo_sd[k]),
                        "win_rate": float(np.nansum(table["wins"][k] + table["ties"][k] / 2) / table["n"][k].sum())
                        if table["n"][k].sum() else None,
                        "comparisons": int(table["n"][k].sum())})
    systems.sort(key=lambda row: row["rank"])
    differences = [{"a": names[i], "b": names[j], "delta": float(point[j] - point[i]),
                    "ci": interval(boots[:, j] - boots[:, i])}
                   for i in range(len(names)) for j in range(i + 1, len(names))]
    matrix = {key: [[None if np.isnan(v) else float(v) for v in row] for row in value]
              for key, value in table.items()}
    return {"systems": systems, "differences": differences, "matrix": {"order": list(names), **matrix},
            "n_comparisons": len(comparisons), "n_raters": int(scores.shape[0]), "n_items": int(scores.shape[1]),
            "method": {"model": "Bradley-Terry, choix.ilsr_pairwise_dense (maximum likelihood), alpha "
                                f"{ALPHA}; a tie counts half a win each way",
                       "ci": f"two-way bootstrap over raters x items (Owen 2007), {draws} draws, seed {seed}, "
                             "percentile 95 % CI, Bradley-Terry refitted per draw",
                       "elo": f"online Elo, K = {ELO_K:g}, scale {ELO_SCALE:g}, base {ELO_BASE:g}, initial "
                              f"{ELO_INITIAL:g}, tie = 0.5, mean over {ELO_ORDERS} random orders (seed {seed})",
                       "bt_elo": f"{ELO_INITIAL:g} + {ELO_SCALE:g} / ln({ELO_BASE:g}) x strength"}}
