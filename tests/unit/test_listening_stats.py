"""Listening-test statistics against known answers: the two-way bootstrap's coverage, Krippendorff's alpha on its
author's worked example, Holm's adjustment, paired differences."""

from __future__ import annotations

import numpy as np
import pytest

from clonebench.listening import agreement
from clonebench.stats import raters as stats
from tests.listening_sim import expected_mean

nan = np.nan
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the 4 observers x 12 units example with
# missing values; published: nominal 0.743, ordinal 0.815, interval 0.849
KRIPPENDORFF_2011 = np.array([[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
                              [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
                              [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
                              [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]])


def simulated_grid(rng, mu, raters=10, items=10, rater_sd=0.5, item_sd=0.5, noise_sd=0.6):
    return np.clip(np.round(mu + rng.normal(0, rater_sd, (raters, 1)) + rng.normal(0, item_sd, (1, items))
                            + rng.normal(0, noise_sd, (raters, items))), 1, 5)


def test_the_two_way_bootstrap_covers_the_known_mean_where_a_ratings_bootstrap_does_not():
    """Raters and items both vary: the 95 % CI over raters x items covers the model's mean in about 95 % of
    simulated tests; resampling the ratings as if independent covers it far less often (too narrow)."""
    mu, sd = 3.4, float(np.sqrt(0.5 ** 2 + 0.5 ** 2 + 0.6 ** 2))
    truth = expected_mean(mu, sd, "mos")
    rng = np.random.default_rng(7)
    two_way = naive = 0
    runs = 120
    for k in range(runs):
        grid = simulated_grid(rng, mu)
        [row], _ = stats.scores({"S1": grid}, draws=300, seed=k)
        two_way += row["ci"][0] <= truth <= row["ci"][1]
        flat = grid.ravel()
        means = flat[rng.integers(flat.size, size=(300, flat.size))].mean(axis=1)
        low, high = np.percentile(means, [2.5, 97.5])
        naive += low <= truth <= high
    assert two_way / runs >= 0.9
    assert naive / runs <= 0.75


def test_differences_are_paired_and_recover_a_known_shift():
    rng = np.random.default_rng(3)
    raters, items = rng.normal(0, 0.6, (12, 1)), rng.normal(0, 0.6, (1, 10))
    noise = lambda: rng.normal(0, 0.2, (12, 10))  # noqa: E731
    grids = {"S1": 3.0 + raters + items + noise(), "S2": 3.8 + raters + items + noise(), "S3": 3.0 + raters + items + noise()}
    rows, boots = stats.scores(grids, draws=1000)
    deltas = {(d["a"], d["b"]): d for d in stats.differences(grids, boots, [("S1", "S2"), ("S1", "S3")])}
    shift = deltas[("S1", "S2")]
    assert shift["ci"][0] < 0.8 < shift["ci"][1] and shift["ci"][0] > 0.5
    assert shift["p_wilcoxon"] < 0.01 and shift["p_holm"] < 0.01
    assert deltas[("S1", "S3")]["ci"][0] < 0 < deltas[("S1", "S3")]["ci"][1]
    width = lambda ci: ci[1] - ci[0]  # noqa: E731
    assert width(shift["ci"]) < 0.5 * min(width(r["ci"]) for r in rows)  # rater and item effects cancel in a pair


def test_holm_and_a_wilcoxon_without_any_difference():
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.wilcoxon_p(np.zeros(8)) == 1.0


def test_krippendorff_alpha_reproduces_the_published_example():
    assert agreement.alpha(KRIPPENDORFF_2011, "mos") == pytest.approx(0.815, abs=5e-4)      # ordinal
    assert agreement.alpha(KRIPPENDORFF_2011, "mushra") == pytest.approx(0.849, abs=5e-4)   # interval
    assert agreement.level("cmos") == "ordinal"
    assert agreement.alpha(KRIPPENDORFF_2011[:1], "mos") is None   # one rater: no agreement to measure
    assert agreement.alpha(np.full((3, 4), 4.0), "mos") is None    # no variation


def test_expected_mean_of_the_simulation_model():
    assert expected_mean(3.0, 0.01, "mos") == pytest.approx(3.0)
    assert expected_mean(9.0, 0.5, "mos") == pytest.approx(5.0)   # clipped at the top of the scale
    assert expected_mean(0.0, 1.0, "cmos") == pytest.approx(0.0, abs=1e-12)
