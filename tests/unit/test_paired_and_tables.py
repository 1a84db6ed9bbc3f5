"""The speaker-cluster bootstrap exactly as the scoring conventions (docs/statistics.md) state it, and the derived reproduction files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from clonebench.report.compare import IncomparableError, compare
from clonebench.report.tables import ResultTable, load_plain
from clonebench.stats.paired import speaker_cluster_ci
from tests.conftest import REPO

HISTORICAL = REPO / "reproduction" / "historical" / "fish_s2_http_libritts16.json"
PAPER = REPO / "reproduction" / "paper" / "published_tables.json"


def conventions_ci(deltas, speakers):
    """Written from the conventions text, independently of the project's implementation."""
    unique = sorted(set(speakers))
    rng = np.random.default_rng(20260930)
    draws = []
    for _ in range(2000):
        idx = rng.integers(len(unique), size=len(unique))
        chosen = []
        for k in idx:
            chosen += [i for i, s in enumerate(speakers) if s == unique[k]]
        draws.append(np.mean([deltas[i] for i in chosen]))
    return list(np.quantile(draws, [0.025, 0.975]))


def test_bootstrap_matches_the_conventions_on_the_historical_pairs():
    pairs = json.loads(HISTORICAL.read_text())["pairs"]
    speakers = [p["speaker_id"] for p in pairs]
    deltas = [p["sim"] - p["wer"] for p in pairs]  # any per-pair numbers will do
    assert speaker_cluster_ci(deltas, speakers) == pytest.approx(conventions_ci(deltas, speakers), abs=0)


def test_historical_file_is_derived_faithfully():
    derived = json.loads(HISTORICAL.read_text())
    shared = json.loads((REPO.parent / "shared" / "reference" / "fish_s2_historical_libritts16.json").read_text()) \
        if (REPO.parent / "shared").is_dir() else None
    assert len(derived["pairs"]) == 16 and derived["seed"] is None and derived["limits"]
    for metric in ("mcd", "wer", "sim"):
        assert np.mean([p[metric] for p in derived["pairs"]]) == pytest.approx(derived["means"][metric], rel=1e-12)
    assert derived["scorers"]["wer"]["protocol"]["normalisation"] == "ascii_punctuation_removed_v2"
    subset = json.loads((REPO / "reproduction" / "subsets" / "libritts16_v1" / "metadata.json").read_text())["pairs"]
    assert [p["pair_id"] for p in derived["pairs"]] == [p["pair_id"] for p in subset]
    assert all(p["target_sha256"] == s["target_sha256"] for p, s in zip(derived["pairs"], subset))
    if shared:
        assert {p["pair_id"]: p["sim"] for p in derived["pairs"]} == {p["pair_id"]: p["sim"] for p in shared["pairs"]}


def test_paper_tables_have_18_published_libritts_rows():
    tables = json.loads(PAPER.read_text())
    assert tables["source"] == "published" and len(tables["tables"]["LibriTTS"]["rows"]) == 18


def test_historical_compared_with_itself_shifted():
    historical = load_plain(HISTORICAL)
    shifted = ResultTable("shifted", [{**r, "mcd": r["mcd"] + 0.5, "wer": r["wer"], "sim": r["sim"] - 0.1}
                                      for r in historical.rows], protocols=historical.protocols)
    result = compare(shifted, historical)
    assert result["metrics"]["mcd"]["paired_mean_delta"] == pytest.approx(0.5)
    assert result["metrics"]["mcd"]["delta_ci95"] == pytest.approx([0.5, 0.5])
    assert result["metrics"]["sim"]["mean_abs_delta"] == pytest.approx(0.1)
    assert result["metrics"]["wer"]["paired_mean_delta"] == 0.0
    assert result["checks"]["inputs"]["audio_hashes"] == 32 and result["historical_limits"]


def test_mixed_normalisations_are_refused_with_the_fix():
    historical = load_plain(HISTORICAL)
    other = {**historical.protocols["wer"], "normalisation": "lowercase_v1"}
    current = ResultTable("run", historical.rows, protocols={**historical.protocols, "wer": other})
    with pytest.raises(IncomparableError, match=r"normalisation 'lowercase_v1' vs 'ascii_punctuation_removed_v2'.*"
                                                r"fix: evaluation.whisper.normalisation"):
        compare(current, historical)


def test_changed_inputs_are_refused():
    historical = load_plain(HISTORICAL)
    rows = [dict(r) for r in historical.rows]
    rows[3]["target_sha256"] = "0" * 64
    with pytest.raises(IncomparableError, match="target_sha256"):
        compare(ResultTable("run", rows), historical)
    with pytest.raises(IncomparableError, match="different pairs"):
        compare(ResultTable("run", rows[:-1]), historical)
