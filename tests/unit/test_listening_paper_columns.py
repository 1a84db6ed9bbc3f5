"""Human listening-test scores in the paper table: which row gets them (the very clips the test presented), the
column beside the predicted MOS, the "(human, n raters)" mark, the natural recordings' row (never bold)."""

from __future__ import annotations

import json

import pytest

from clonebench.core.errors import ClonebenchError
from clonebench.listening.paper_columns import attach_listening
from clonebench.report.paper import csv_text, latex, markdown


def summary(kind: str = "mos", kept: int = 9) -> dict:
    return {"kind": kind, "test_id": "lt-0123456789ab", "items": 2,
            "raters": {"given": 10, "kept": kept, "excluded": []},
            "agreement": {"krippendorff_alpha": 0.61, "level": "ordinal"},
            "systems": [{"code": "S1", "label": "fish", "role": "run", "clips_sha256": {"p1": "a1", "p2": "a2"}},
                        {"code": "S2", "label": "s2cpp", "role": "run", "clips_sha256": {"p1": "b1", "p2": "b2"}},
                        {"code": "natural", "label": "natural recordings", "role": "natural"}],
            "scores": [{"condition": "S1", "mean": 3.9, "ci": [3.6, 4.1]}, {"condition": "S2", "mean": 3.2, "ci": [2.9, 3.5]},
                       {"condition": "natural", "mean": 4.6, "ci": [4.4, 4.8]}], "cmos": []}


def write(tmp_path, name: str, payload: dict):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps(payload))
    return folder


def rows_for(names):
    return [{"name": n, "source": "run", "cells": {"mos": {"mean": 4.0, "n": 2, "n_requested": 2}}, "notes": []}
            for n in names]


def test_human_scores_go_to_the_runs_that_hold_the_presented_clips(tmp_path):
    test = write(tmp_path, "mos", summary())
    rows = rows_for(["fish run", "rescored fish", "other"])
    samples = [{"p1": {"generated_sha256": "a1"}, "p2": {"generated_sha256": "a2"}},
               {"p1": {"generated_sha256": "a1"}, "p2": {"generated_sha256": "a2"}, "p3": {}},  # same audio: matches
               {"p1": {"generated_sha256": "a1"}, "p2": {"generated_sha256": "zz"}}]            # one clip differs
    rows += attach_listening(rows, samples, [test])
    assert [r["cells"].get("human_mos", {}).get("mean") for r in rows] == [3.9, 3.9, None, 4.6]
    assert rows[3]["source"] == "natural" and rows[3]["cells"]["human_mos"]["reference"] is True
    text = markdown(rows)
    header = text.splitlines()[0]
    assert header.index("MOS↑") < header.index("MOS (human)↑") < header.index("MCD↓")
    assert "**3.900 [3.600, 4.100] (human, 9 raters)**" in text  # the best run's cell is bold ...
    assert "| 4.600 [4.400, 4.800] (human, 9 raters) |" in text    # ... the natural recordings' never
    assert "MOS (human, 9 raters kept of 10): listening test lt-0123456789ab, 2 items" in text
    assert "Not in this table: s2cpp." in text
    assert r"MOS (human)$\uparrow$" in latex(rows)
    assert "human_mos,human_mos_ci_low,human_mos_ci_high,human_mos_n" in csv_text(rows)
    assert "human" not in markdown(rows_for(["plain"]))  # no test, no column


def test_cmos_is_a_footnote_and_bad_combinations_are_refused(tmp_path):
    cmos = summary("cmos")
    cmos.update(scores=[], cmos=[{"label": "s2cpp vs fish", "mean": -0.42, "ci": [-0.7, -0.1], "p_wilcoxon": 0.012}])
    rows = rows_for(["fish", "s2cpp"])
    samples = [{"p1": {"generated_sha256": "a1"}, "p2": {"generated_sha256": "a2"}},
               {"p1": {"generated_sha256": "b1"}, "p2": {"generated_sha256": "b2"}}]
    assert attach_listening(rows, samples, [write(tmp_path, "cmos", cmos)]) == []
    assert "CMOS s2cpp vs fish = -0.42 [-0.70, -0.10], Wilcoxon p = 0.012." in rows[0]["notes"][0]
    assert all("human_mos" not in r["cells"] for r in rows)
    with pytest.raises(ClonebenchError, match="are both mos tests"):
        attach_listening(rows, samples, [write(tmp_path, "a", summary()), write(tmp_path, "b", summary())])
    with pytest.raises(ClonebenchError, match="none of its systems"):
        attach_listening(rows, [{"p1": {"generated_sha256": "x"}}], [write(tmp_path, "c", summary())])
    with pytest.raises(ClonebenchError, match="no rater was kept"):
        attach_listening(rows, samples, [write(tmp_path, "d", summary(kept=0))])
    with pytest.raises(ClonebenchError, match="run `clonebench listening-results"):
        attach_listening(rows, samples, [tmp_path])
