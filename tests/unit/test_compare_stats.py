"""The comparison statistics against hand-computed cases, a direct re-implementation, exact enumeration, and a
simulation (a true difference of zero rejects at about 5 %; a true difference is detected; Holm holds the
family-wise rate for three systems). Everything is vectorised and seeded: the module runs in a few seconds."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from clonebench.stats import seed_variance
from clonebench.stats.cluster import cluster_bootstrap, cohen_dz, draw_counts, wins
from clonebench.stats.holm import holm


def test_holm_by_hand():
    # sorted 0.005, 0.01, 0.03, 0.04 -> 4*0.005, 3*0.01, 2*0.03, max(0.06, 1*0.04)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == [1.0, 1.0]                       # clipped at 1, monotone
    assert holm([None, 0.02, 0.04]) == pytest.approx([None, 0.04, 0.04])  # None is not counted
    assert holm([]) == []


def test_cohen_dz_and_wins_by_hand():
    assert cohen_dz([1.0, 2.0, 3.0]) == pytest.approx(2.0)       # mean 2, sd 1
    assert cohen_dz([-1.0, 1.0, 3.0]) == pytest.approx(0.5)      # mean 1, sd 2
    assert cohen_dz([0.1, 0.1]) is None and cohen_dz([1.0]) is None
    a, b = [1, 2, 3, 4], [2, 2, 1, 5]
    assert wins(a, b, higher_is_better=True) == {"b_wins": 2, "a_wins": 1, "ties": 1}
    assert wins(a, b, higher_is_better=False) == {"b_wins": 1, "a_wins": 2, "ties": 1}


def test_mean_and_cluster_robust_se_by_hand():
    # clusters a,a,b,b,c,c: sums 3, 7, 11; mean 3.5; residual sums -4, 0, 4; se = sqrt(3/2 * 32) / 6
    r = cluster_bootstrap([1, 2, 3, 4, 5, 6], ["a", "a", "b", "b", "c", "c"], draws=500)
    assert r["mean"] == pytest.approx(3.5) and r["se"] == pytest.approx(math.sqrt(48) / 6)
    assert r["clusters"] == 3 and r["n"] == 6


def _direct(values, clusters, counts, confidence=0.95):
    """A plain re-implementation: each draw concatenates the picked speakers (each pick its own cluster)."""
    names = sorted(set(clusters))
    groups = [np.asarray([v for v, c in zip(values, clusters) if c == name]) for name in names]
    g = len(groups)

    def mean_se(picked):
        data = np.concatenate(picked)
        m = data.mean()
        return m, math.sqrt(g / (g - 1) * sum((p.sum() - len(p) * m) ** 2 for p in picked)) / len(data)

    m, se = mean_se(groups)
    if len(counts) == 0:
        return m, se, None, None
    t = []
    for row in counts:
        picked = [groups[k] for k in range(g) for _ in range(int(row[k]))]
        ms, ses = mean_se(picked)
        t.append(0.0 if ses == 0 and ms == m else (ms - m) / ses if ses > 0 else math.copysign(math.inf, ms - m))
    t = np.abs(np.asarray(t))
    p = (1 + (t >= abs(m / se) * (1 - 1e-12)).sum()) / (len(t) + 1)
    q = np.quantile(t, confidence, method="higher")
    return m, se, p, [m - q * se, m + q * se]


def test_vectorised_bootstrap_equals_a_direct_implementation():
    rng = np.random.default_rng(3)
    clusters = [f"s{k}" for k in range(7) for _ in range(rng.integers(1, 4))]
    values = rng.normal(0.2, 1.0, len(clusters))
    r = cluster_bootstrap(values, clusters, draws=300, seed=11)
    m, se, p, ci = _direct(values, clusters, draw_counts(7, 300, 11))
    assert r["mean"] == pytest.approx(m, abs=1e-12) and r["se"] == pytest.approx(se, abs=1e-12)
    assert r["p_value"] == pytest.approx(p, abs=1e-12) and r["ci"] == pytest.approx(ci, abs=1e-9)


def test_bootstrap_p_value_converges_to_the_exact_enumeration():
    # three speakers: the bootstrap distribution is the 27 equally likely speaker tuples, enumerated here
    values, clusters = [0.9, 1.4, -0.2, 0.3, 2.0, 1.1, 0.6], ["a", "a", "b", "b", "c", "c", "c"]
    m, se, _, _ = _direct(values, clusters, np.zeros((0, 3)))
    tuples = [np.bincount(t, minlength=3) for t in itertools.product(range(3), repeat=3)]
    _, _, exact, _ = _direct(values, clusters, np.asarray(tuples))
    exact = (exact * 28 - 1) / 27  # undo the (1 + k) / (B + 1) of a sampled bootstrap: P(|T*| >= |T|)
    r = cluster_bootstrap(values, clusters, draws=200_000, seed=5)
    assert r["p_value"] == pytest.approx(exact, abs=0.005)


def test_degenerate_cases():
    constant = cluster_bootstrap([0.1] * 6, ["a", "b", "c"] * 2, draws=999)
    assert constant["p_value"] == pytest.approx(1 / 1000) and constant["ci"] == pytest.approx([0.1, 0.1])
    zero = cluster_bootstrap([0.0] * 6, ["a", "b", "c"] * 2, draws=999)
    assert zero["p_value"] == 1.0
    one = cluster_bootstrap([0.1, 0.3], ["a", "a"])
    assert one["p_value"] is None and one["ci"] is None and one["mean"] == pytest.approx(0.2)


def _simulate(delta, datasets=2000, speakers=20, per=3, seed=0):
    rng = np.random.default_rng(seed)
    clusters = [f"s{g}" for g in range(speakers) for _ in range(per)]
    speaker_effect = rng.normal(0.0, 0.5, (datasets, speakers)).repeat(per, axis=1)
    return delta + speaker_effect + rng.normal(0.0, 1.0, (datasets, speakers * per)), clusters


def test_simulation_zero_difference_rejects_about_five_percent():
    x, clusters = _simulate(0.0)
    r = cluster_bootstrap(x, clusters, draws=999, seed=1)
    rejected = float((r["p_value"] < 0.05).mean())
    covered = float(((r["ci"][:, 0] <= 0) & (0 <= r["ci"][:, 1])).mean())
    assert 0.035 <= rejected <= 0.065, rejected  # 2000 data sets: binomial sd 0.5 %
    assert 0.935 <= covered <= 0.965, covered


def test_simulation_a_true_difference_is_detected():
    x, clusters = _simulate(0.6, datasets=500, seed=2)
    r = cluster_bootstrap(x, clusters, draws=999, seed=1)
    assert float((r["p_value"] < 0.05).mean()) >= 0.8
    assert float(((r["ci"][:, 0] <= 0.6) & (0.6 <= r["ci"][:, 1])).mean()) >= 0.92


def test_simulation_holm_keeps_the_family_wise_rate_for_three_systems():
    # A, B, C identical in distribution; B - A and C - A are tested and Holm-adjusted per data set
    rng = np.random.default_rng(4)
    datasets, speakers, per = 1500, 16, 3
    clusters = [f"s{g}" for g in range(speakers) for _ in range(per)]
    shared = rng.normal(0.0, 1.0, (datasets, speakers)).repeat(per, axis=1)  # speaker difficulty, common to all
    a, b, c = (shared + rng.normal(0.0, 0.7, (datasets, speakers * per)) for _ in range(3))
    counts = draw_counts(speakers, 999, 9)
    p_b = cluster_bootstrap(b - a, clusters, counts=counts, draws=999)["p_value"]
    p_c = cluster_bootstrap(c - a, clusters, counts=counts, draws=999)["p_value"]
    adjusted = np.asarray([holm([pb, pc]) for pb, pc in zip(p_b, p_c)])
    raw_any = float(((p_b < 0.05) | (p_c < 0.05)).mean())
    family = float((adjusted < 0.05).any(axis=1).mean())
    assert family <= 0.065 and family < raw_any, (family, raw_any)


def test_seed_variance_components_by_hand():
    # 2 runs x 3 pairs: per-pair variances (ddof 1) 0.5, 0, 2 -> seed var 5/6; pair means 1.5, 3, 6 ->
    # var 21/4 (ddof 1) - (5/6)/2 = 4.8333...; run means 3, 4
    y = np.array([[1.0, 3.0, 5.0], [2.0, 3.0, 7.0]])
    c = seed_variance.components(y)
    assert c["seed_var"] == pytest.approx(5 / 6) and c["pair_var"] == pytest.approx(21 / 4 - 5 / 12)
    assert c["run_means"] == [3.0, 4.0] and c["run_mean_sd"] == pytest.approx(math.sqrt(0.5))
    assert c["seed_sd_of_mean"] == pytest.approx(math.sqrt(5 / 18))
    assert seed_variance.components(y[:1]) is None
    verdict = seed_variance.versus_reseeding(1.0, 3, (c, 2), (None, 1), c["seed_var"])
    # sd = sqrt(5/6/(3*2) + 5/6/(3*1)) = sqrt(5/12)
    assert verdict["reseed_sd"] == pytest.approx(math.sqrt(5 / 12)) and verdict["assumed_pooled_for"] == ["B"]
    assert verdict["exceeds"] is False and "within what re-seeding alone produces" in verdict["verdict"]
    assert seed_variance.versus_reseeding(2.0, 3, (c, 2), (None, 1), c["seed_var"])["exceeds"] is True
