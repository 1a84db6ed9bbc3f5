"""An arena (pairwise) listening test built from three real runs: the pair design, simulated raters with a known
strength order, ``listening-results`` (Bradley-Terry ranking, win rates, Elo, screening), the refused files, and
the rank column the report gets."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from clonebench.cli.main import main as cli
from clonebench.core.errors import ClonebenchError
from clonebench.listening.build import build_test
from clonebench.listening.integrity import sealed
from clonebench.listening.paper_columns import attach_listening
from clonebench.listening.ratings import load_key
from clonebench.listening.results import write_results
from clonebench.report.paper import markdown
from tests.listening_runs import generation_runs

STRENGTH = {"S1": 1.2, "S2": 0.0, "S3": -1.2}  # fish > s2cpp > third


@pytest.fixture(scope="module")
def runs(tmp_path_factory, demo_dataset):
    return generation_runs(tmp_path_factory.mktemp("arena_runs"), demo_dataset, names=("run_a", "run_b", "run_c"))


@pytest.fixture(scope="module")
def test_dir(tmp_path_factory, runs):
    out = tmp_path_factory.mktemp("arena") / "arena"
    assert cli(["listening-test", str(runs["run_a"]), str(runs["run_b"]), str(runs["run_c"]), "--kind", "arena",
                "--items", "8", "--pairs-per-item", "2", "--output", str(out), "--label", "fish", "--label", "s2cpp",
                "--label", "third"]) == 0
    return out


def rater(key: dict, rater_id: str, seed: int, lazy: bool = False) -> dict:
    """A simulated rater: Bradley-Terry with the known strengths, some ties; clean beats degraded; ``lazy``
    answers "same" to everything. Records in a shuffled order, clips in a shuffled A/B order, as the page does."""
    rng = np.random.default_rng(seed)
    test = [t for t in key["trials"] if t["phase"] == "test"]
    records = []
    for position, k in enumerate(rng.permutation(len(test))):
        trial = test[k]
        clips = list(trial["clips"])[::-1] if rng.random() < 0.5 else list(trial["clips"])
        clip_a, clip_b = (key["clips"][c] for c in clips)
        if lazy:
            answer = "same"
        elif not trial["systems"]:  # clean vs degraded
            answer = "B" if clip_a["role"] == "degraded" else "A"
        else:
            p = 1 / (1 + np.exp(-(STRENGTH[clip_a["system"]] - STRENGTH[clip_b["system"]])))
            u = rng.random()
            answer = "same" if u < 0.15 else "A" if u < 0.15 + 0.85 * p else "B"
        records.append({"trial": trial["trial_id"], "position": position, "clips": clips, "reference": None,
                        "plays": {c: 1 for c in clips}, "ends": {}, "shown_ms": 1000 * position,
                        "answered_ms": 1000 * position + 900, "rating": answer})
    payload = {"schema": "clonebench.listening.ratings/v1", "test_id": key["test_id"], "kind": "arena",
               "rater_id": rater_id, "user_agent": "simulated", "training": [], "trials": records}
    return sealed(key["salt"], payload)


def write(folder: Path, files: dict[str, dict]) -> list[Path]:
    for old in folder.glob("*.json"):
        old.unlink()
    paths = []
    for name, data in files.items():
        paths.append(folder / f"{name}.json")
        paths[-1].write_text(json.dumps(data))
    return paths


def test_the_arena_design_deals_every_system_pair_evenly(test_dir):
    key = load_key(test_dir)
    assert key["kind"] == "arena" and [s["code"] for s in key["systems"]] == ["S1", "S2", "S3"]  # no natural
    rating = [t for t in key["trials"] if t["phase"] == "test" and t["type"] == "rating"]
    pairs = Counter(tuple(t["systems"]) for t in rating)
    assert set(pairs) == set(itertools.combinations(["S1", "S2", "S3"], 2)) and set(pairs.values()) == {5, 6}
    per_item = Counter(t["item"] for t in rating)
    assert len(per_item) == 8 and set(per_item.values()) == {2}
    assert all(len({tuple(t["systems"]) for t in rating if t["item"] == i}) == 2 for i in per_item)
    first = Counter(key["clips"][t["clips"][0]]["system"] for t in rating)
    assert 0 < first["S1"] + first["S2"] + first["S3"] == 16  # A/B sides drawn per trial
    checks = Counter(t["type"] for t in key["trials"] if t["phase"] == "test" and t["type"] != "rating")
    assert checks == {"check_degraded": 2, "check_repeat": 2}
    with pytest.raises(ClonebenchError, match="pairs-per-item 4: give 1..3"):
        build_test([Path(s["run_dir"]) for s in key["systems"]], "arena", 2, test_dir.parent / "four", pairs_per_item=4)
    with pytest.raises(ClonebenchError, match="pairs-per-item is for arena tests"):
        build_test([Path(s["run_dir"]) for s in key["systems"]], "cmos", 2, test_dir.parent / "cmos", pairs_per_item=1)
    page = (test_dir / "site" / "index.html").read_text()
    assert "About the same" in page and "fish" not in page and "S1" not in page


def test_listening_results_ranks_the_known_order(test_dir, capsys):
    key = load_key(test_dir)
    files = {f"r{k:02d}": rater(key, f"r{k:02d}", seed=k) for k in range(16)}
    files["lazy"] = rater(key, "lazy", seed=99, lazy=True)  # "same" to everything: fails the degraded checks
    paths = write(test_dir / "ratings", files)
    summary = write_results(test_dir, paths, draws=300)
    assert summary["raters"]["kept"] == 16 and summary["raters"]["excluded"][0]["rater"] == "lazy"
    assert "degraded copy not judged worse" in summary["raters"]["excluded"][0]["reason"]
    ranked = summary["arena"]["systems"]
    assert [r["label"] for r in ranked] == ["fish", "s2cpp", "third"] and [r["rank"] for r in ranked] == [1, 2, 3]
    assert [r["elo"] for r in ranked] == sorted((r["elo"] for r in ranked), reverse=True)
    assert ranked[0]["ci"][0] > ranked[2]["ci"][1] and ranked[0]["rank_ci"][0] == 1
    diffs = {(d["a"], d["b"]): d for d in summary["arena"]["differences"]}
    assert diffs[("S1", "S3")]["ci"][1] < 0  # third below fish, clearly
    matrix = summary["arena"]["matrix"]
    assert matrix["order"] == ["S1", "S2", "S3"] and matrix["labels"] == ["fish", "s2cpp", "third"]
    assert sum(map(sum, matrix["n"])) == 2 * 16 * 16  # 16 kept raters x 16 comparisons, counted both ways
    assert matrix["rate"][0][2] > 0.6 and 0 < summary["agreement"]["krippendorff_alpha"] < 1
    long = (test_dir / "ratings_long.csv").read_text()
    assert "s2cpp vs fish" in long or "third vs fish" in long
    assert cli(["listening-results", str(test_dir), *map(str, paths), "--format", "md"]) == 0
    text = capsys.readouterr().out
    assert "| 1 | fish |" in text and "Win rate of the row system" in text and "BT (Elo scale)" in text
    assert cli(["listening-results", str(test_dir), *map(str, paths), "--format", "latex"]) == 0
    assert r"\begin{tabular}" in capsys.readouterr().out
    assert cli(["listening-results", str(test_dir), *map(str, paths), "--format", "csv"]) == 0
    csv_rows = capsys.readouterr().out.splitlines()
    assert any(",arena,rank,fish,1," in r for r in csv_rows) and any(",arena,elo,third," in r for r in csv_rows)
    # the report's rank column: the rows whose runs hold the very clips the test presented
    samples = [{p: {"generated_sha256": sha} for p, sha in s["clips_sha256"].items()} for s in key["systems"]]
    rows = [{"name": s["label"], "source": "run", "cells": {}, "notes": []} for s in key["systems"]]
    rows += attach_listening(rows, samples, [test_dir])
    table = markdown(rows)
    assert "Arena rank (human)↓" in table.splitlines()[0]
    assert "**1 [1, 1] (human, 16 raters)**" in table and "| 3 [3, 3] (human, 16 raters) |" in table
    assert "Arena fish: rank 1" in table


def test_arena_files_that_do_not_belong_are_refused(test_dir):
    key = load_key(test_dir)
    good = rater(key, "ok", seed=1)
    off = rater(key, "off", seed=2)
    off["ratings"]["trials"][0]["rating"] = "C"
    number = rater(key, "number", seed=3)
    number["ratings"]["trials"][0]["rating"] = 1
    unknown = rater(key, "unknown", seed=4)
    unknown["ratings"]["trials"][0]["trial"] = "t" + "0" * 20
    for data in (off, number, unknown):
        data.update(sealed(key["salt"], data["ratings"]))
    paths = write(test_dir / "ratings", {"ok": good, "off": off, "number": number, "unknown": unknown})
    with pytest.raises(ClonebenchError) as refused:
        write_results(test_dir, paths, draws=50)
    problems = refused.value.problems
    assert set(problems) == {str(p) for p in paths[1:]}
    assert any("ratings.trials[0].rating" in line for line in problems[str(paths[1])])
    assert any("ratings.trials[0].rating" in line for line in problems[str(paths[2])])
    assert any("is not a trial of this test" in line for line in problems[str(paths[3])])


def test_a_scripted_rater_completes_the_arena_page_in_chromium(runs, tmp_path):
    """The page's A / About the same / B answer, in headless Chromium from file://: the downloaded file (its digest
    computed in JS) is accepted and ranks the scripted order."""
    import playwright.sync_api as playwright_api

    from clonebench.listening.ratings import check_sheet
    from clonebench.report.browser import launch
    from tests.listening_browser import complete, watch

    out = tmp_path / "small"
    assert cli(["listening-test", str(runs["run_a"]), str(runs["run_b"]), str(runs["run_c"]), "--kind", "arena",
                "--items", "2", "--output", str(out), "--seed", "5", "--checks", "1"]) == 0
    key = load_key(out)

    def policy(kind, clips, reference):
        assert kind == "arena" and reference is None and len(clips) == 2
        a, b = (key["clips"][c] for c in clips)
        if "degraded" in (a["role"], b["role"]):
            return "B" if a["role"] == "degraded" else "A"  # checks and the training: clean vs degraded
        return "A" if STRENGTH.get(a["system"], 0) > STRENGTH.get(b["system"], 0) else "B"

    site = (out / "site").resolve().as_uri() + "/"
    manager = playwright_api.sync_playwright().start()
    browser = launch(manager)
    try:
        context = browser.new_context(accept_downloads=True)
        page = context.new_page()
        seen = watch(page, site)
        page.goto(site + "index.html")
        assert "About the same" in page.content() and "run_a" not in page.content()
        path = complete(page, site + "index.html", "alice", policy, out / "ratings")
        assert seen["errors"] == [] and seen["blocked"] == [], seen
        context.close()
    finally:
        browser.close()
        manager.stop()
    sheet, problems = check_sheet(path, key)
    assert problems == [] and {r["rating"] for r in sheet.records.values()} <= {"A", "B"}
    summary = write_results(out, [path], draws=50)
    assert [r["label"] for r in summary["arena"]["systems"]] == [s["label"] for s in key["systems"]]
