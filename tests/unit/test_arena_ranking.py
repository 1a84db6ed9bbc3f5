"""Arena (pairwise) ranking statistics (clonebench.stats.arena) on simulated raters with a known Bradley-Terry
strength order: the fit recovers the order, the two-way bootstrap CIs of the strength differences cover the truth
at about the nominal rate, Elo agrees on a clear case, the win-rate matrix is the counted wins, and the pair design
deals every system pair evenly over the items."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from pydantic import ValidationError

from clonebench.listening.design import balanced_pairs
from clonebench.listening.schemas import payload_model
from clonebench.stats import arena

TRUE = np.array([0.9, 0.45, 0.0, -0.45, -0.9])  # Bradley-Terry strengths of S0 (best) ... S4


def simulate(seed: int, raters: int, items: int, strengths=TRUE, item_sd=0.4, rater_sd=0.2, tie=0.3):
    """Every rater compares every system pair on every item. A clip's quality varies by item (item x system
    effects) and raters differ in taste (rater x system effects); items differ in difficulty (how often "about
    the same" is answered: harder items, more ties). A tie is drawn with probability tie_i * 4 p (1 - p) and the
    win with p - tie / 2, so the expected score (ties half) is the Bradley-Terry p of the strengths."""
    rng = np.random.default_rng(seed)
    k = len(strengths)
    item_fx, rater_fx = rng.normal(0, item_sd, (items, k)), rng.normal(0, rater_sd, (raters, k))
    item_tie = np.clip(tie + rng.normal(0, 0.1, items), 0, 1)
    out = []
    for r, i in itertools.product(range(raters), range(items)):
        for a, b in itertools.combinations(range(k), 2):
            d = strengths[a] - strengths[b] + item_fx[i, a] - item_fx[i, b] + rater_fx[r, a] - rater_fx[r, b]
            p = 1 / (1 + np.exp(-d))
            t, u = item_tie[i] * 4 * p * (1 - p), rng.random()
            score = 0.5 if u < t else 1.0 if u < p + t / 2 else 0.0
            out.append((r, i, a, b, score) if rng.random() < 0.5 else (r, i, b, a, 1.0 - score))  # A/B sides
    return out


def test_the_fitted_ranking_recovers_the_known_order():
    comparisons = simulate(7, raters=12, items=20)
    scores = arena.score_matrices(comparisons, 12, 20, 5)
    result = arena.ranking(scores, comparisons, [f"S{k}" for k in range(5)], draws=200)
    assert [r["condition"] for r in result["systems"]] == ["S0", "S1", "S2", "S3", "S4"]
    assert [r["rank"] for r in result["systems"]] == [1, 2, 3, 4, 5]
    strengths = np.array([r["strength"] for r in result["systems"]])
    assert np.allclose(strengths, TRUE, atol=0.2) and abs(strengths.mean()) < 1e-9
    assert all(r["ci"][0] < r["strength"] < r["ci"][1] for r in result["systems"])
    assert result["systems"][0]["rank_ci"] == [1, 1]
    elo = [r["elo"] for r in result["systems"]]
    assert elo == sorted(elo, reverse=True)  # Elo's order agrees on this clear case
    assert "a tie counts half a win each way" in result["method"]["model"]
    assert "K = 4" in result["method"]["elo"]


def test_bootstrap_cis_of_strength_differences_cover_the_truth_at_about_the_nominal_rate(capsys):
    """100 simulated studies (5 raters x 8 items x 10 pairs each, fixed seeds), 80 bootstrap draws each: the share
    of the 1,000 95 % CIs of the differences that hold the true difference."""
    covered, total = 0, 0
    for study in range(100):
        comparisons = simulate(1000 + study, raters=5, items=8)
        scores = arena.score_matrices(comparisons, 5, 8, 5)
        point = arena.fit(scores.sum(axis=(0, 1)))
        boots = arena.bootstrap(scores, draws=80, seed=study, point=point)
        for a, b in itertools.combinations(range(5), 2):
            low, high = np.percentile(boots[:, b] - boots[:, a], [2.5, 97.5])
            covered += low <= TRUE[b] - TRUE[a] <= high
            total += 1
    rate = covered / total
    with capsys.disabled():
        print(f"\narena: 95 % CI coverage of the strength differences over 100 studies: {rate:.3f}")
    assert 0.88 <= rate <= 0.99, rate


def test_elo_orders_a_clear_case_and_ties_score_half():
    comparisons = [(0, 0, 0, 1, 1.0)] * 30 + [(0, 0, 1, 2, 1.0)] * 30 + [(0, 0, 0, 2, 1.0)] * 30
    mean, sd = arena.elo(comparisons, 3, orders=20)
    assert mean[0] > mean[1] > mean[2] and abs(mean.sum() - 3000) < 1e-6 and (sd >= 0).all()
    theta = arena.fit(arena.score_matrices(comparisons, 1, 1, 3)[0, 0])
    assert theta[0] > theta[1] > theta[2]
    ties = [(0, 0, 0, 1, 0.5)] * 20 + [(0, 0, 1, 2, 0.5)] * 20
    assert np.allclose(arena.fit(arena.score_matrices(ties, 1, 1, 3)[0, 0]), 0, atol=1e-6)
    assert np.allclose(arena.elo(ties, 3, orders=5)[0], 1000)


def test_the_win_rate_matrix_is_the_counted_wins():
    comparisons = simulate(3, raters=3, items=4)
    table = arena.counts(comparisons, 5)
    for a, b in itertools.permutations(range(5), 2):
        wins = sum(1 for c in comparisons if (c[2], c[3], c[4]) in ((a, b, 1.0), (b, a, 0.0)))
        ties = sum(1 for c in comparisons if {c[2], c[3]} == {a, b} and c[4] == 0.5)
        n = sum(1 for c in comparisons if {c[2], c[3]} == {a, b})
        assert table["wins"][a, b] == wins and table["ties"][a, b] == ties and table["n"][a, b] == n == 12
        assert table["rate"][a, b] == pytest.approx((wins + ties / 2) / n)
        assert table["rate"][a, b] + table["rate"][b, a] == pytest.approx(1)
    assert np.isnan(np.diag(table["rate"])).all()
    summed = arena.score_matrices(comparisons, 3, 4, 5).sum(axis=(0, 1))
    assert np.allclose(summed, table["wins"] + table["ties"] / 2)
    result = arena.ranking(arena.score_matrices(comparisons, 3, 4, 5), comparisons, list("ABCDE"), draws=20)
    assert result["matrix"]["wins"] == table["wins"].tolist() and result["n_comparisons"] == len(comparisons)


@pytest.mark.parametrize("systems,items,per_item", [(5, 8, 3), (5, 7, 10), (3, 8, 2), (4, 5, 4), (2, 6, 1),
                                                     (6, 9, 7)])
def test_the_pair_design_covers_every_system_pair_evenly(systems, items, per_item):
    codes = [f"S{k + 1}" for k in range(systems)]
    pairs = list(itertools.combinations(codes, 2))
    dealt = balanced_pairs(pairs, items, per_item, np.random.default_rng(items))
    assert len(dealt) == items and all(len(d) == per_item == len(set(d)) for d in dealt)  # no pair twice an item
    used = [p for d in dealt for p in d]
    counts = [used.count(p) for p in pairs]
    assert max(counts) - min(counts) <= 1 and sum(counts) == items * per_item
    appearances = [sum(code in p for p in used) for code in codes]
    assert max(appearances) - min(appearances) <= systems - 1  # systems appear about equally often
    again = balanced_pairs(pairs, items, per_item, np.random.default_rng(items))
    assert again == dealt  # seeded


def test_the_ratings_schema_takes_a_b_or_same_only():
    model = payload_model("arena")
    base = {"schema": "clonebench.listening.ratings/v1", "test_id": "lt-1", "kind": "arena", "rater_id": "r1"}
    record = {"trial": "t1", "position": 0, "clips": ["c1", "c2"], "shown_ms": 0, "answered_ms": 5}
    for answer in ("A", "B", "same"):
        model.model_validate({**base, "trials": [{**record, "rating": answer}]})
    for answer in ("C", "a", 1, 0, True, None, ["A"]):
        with pytest.raises(ValidationError):
            model.model_validate({**base, "trials": [{**record, "rating": answer}]})
