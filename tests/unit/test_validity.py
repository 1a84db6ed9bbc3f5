"""Validity rules: which per-sample values count (evaluate/protocols/validity.py) and that the aggregate never averages others."""

from __future__ import annotations

import math

import pytest

from clonebench.evaluate.protocols.base import ScoreRecord
from clonebench.evaluate.protocols.validity import checked, invalid_value
from clonebench.stats.utterance import summarise


@pytest.mark.parametrize("values, problem", [
    ({"sim": math.nan, "sva": 0.0}, "sim=nan is not finite"),
    ({"sim": 1.01, "sva": 1.0}, "outside"),
    ({"sim": -1.2, "sva": 0.0}, "outside"),
    ({"wer": -0.5, "hypothesis": "x"}, "wer=-0.5 is outside"),
    ({"wer": math.inf}, "not finite"),
    ({"mcd": -3.0}, "outside"),
    ({"stoi": 1.5}, "outside"),
    ({"dnsmos": math.inf, "dnsmos_sig": 3.0}, "dnsmos=inf is not finite"),
    ({"utmos": -math.inf}, "not finite"),  # any metric, even one this module does not know
    ({"sva": 0.5}, "not 0 or 1"),
])
def test_invalid_values_are_named(values, problem):
    assert problem in invalid_value(values)
    record = checked("scorer", ScoreRecord("s1", values))
    assert not record.ok and problem in record.error and record.values == {}


@pytest.mark.parametrize("values", [{"sim": 1.0000004, "sva": 1.0}, {"sim": -1.0, "sva": 0.0},
                                    {"wer": 0.0, "hypothesis": "", "wer_edits": 0}, {"mcd": 0.0},
                                    {"stoi": -0.2}, {"dnsmos": 7.5}])
def test_valid_values_pass(values):
    assert invalid_value(values) is None and checked("scorer", ScoreRecord("s1", values)).ok


def test_summary_never_averages_a_non_finite_value():
    rows = [{"sim": 0.5}, {"sim": math.nan}, {"sim": 0.7}, {"sim": None}]
    summary = summarise(rows, ["sim"], 4, 50, 0.95, 1, 42)
    assert summary["sim"]["mean"] == pytest.approx(0.6) and summary["sim"]["n_valid"] == 2
