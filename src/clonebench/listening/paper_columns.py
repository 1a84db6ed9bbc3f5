"""Listening-test results in the paper table (``clonebench report RUN ... --listening DIR``): a human MOS, SMOS or
MUSHRA column (an arena test: its rank, 1 = best, with the bootstrap 95 % interval of the rank) beside the
predicted MOS, each cell marked "(human, n raters)", a row for the natural recordings, and a footnote per test
(CMOS results, which compare systems rather than score one, are footnotes only).

A test's system belongs to a report row when the row's run has, for every pair of the test, the very clip the
test presented (same pair id, same generated audio sha256): a re-scored or resumed run of the same audio matches,
another run does not."""

from __future__ import annotations

from pathlib import Path

from clonebench.core.errors import ClonebenchError
from clonebench.core.untrusted import read_json
from clonebench.listening.design import NATURAL
from clonebench.listening.results import RESULTS
from clonebench.listening.tables import NAMES

MAX_SUMMARY_BYTES = 64 * 1024 * 1024  # results.json of a listening test: a few MB at most
COLUMN = {"mos": "human_mos", "smos": "human_smos", "mushra": "human_mushra", "arena": "human_arena"}


def load_summary(test_dir: Path) -> dict:
    path = Path(test_dir) / RESULTS
    if not path.is_file():
        raise ClonebenchError(f"--listening {test_dir}: no {RESULTS}; run `clonebench listening-results {test_dir} "
                              "RATINGS.json ...` first")
    summary = read_json(path, max_bytes=MAX_SUMMARY_BYTES, within=test_dir, what="listening results")
    if not isinstance(summary, dict):
        raise ClonebenchError(f"{path}: not a listening-results summary (a JSON object); run `clonebench "
                              f"listening-results {test_dir} RATINGS.json ...` again")
    return summary


def _matches(system: dict, samples: dict[str, dict]) -> bool:
    clips = system.get("clips_sha256") or {}
    return bool(clips) and all(samples.get(pair, {}).get("generated_sha256") == sha for pair, sha in clips.items())


def _note(summary: dict) -> str:
    raters, agreement = summary["raters"], summary.get("agreement") or {}
    alpha = agreement.get("krippendorff_alpha")
    text = (f"{NAMES[summary['kind']]} (human, {raters['kept']} raters kept of {raters['given']}): listening test "
            f"{summary['test_id']}, {summary['items']} items; 95 % CI: two-way bootstrap over raters × items; "
            f"Krippendorff's α ({agreement.get('level', '–')}) = {'n/a' if alpha is None else f'{alpha:.3f}'}.")
    for row in (summary.get("arena") or {}).get("systems", []):
        text += (f" Arena {row['label']}: rank {row['rank']} (95 % CI {row['rank_ci'][0]}–{row['rank_ci'][1]}), "
                 f"Bradley–Terry {row['bt_elo']:.0f} on the Elo scale, Elo {row['elo']:.0f}.")
    for row in summary.get("cmos", []):
        text += (f" CMOS {row['label']} = {row['mean']:+.2f} [{row['ci'][0]:+.2f}, {row['ci'][1]:+.2f}], "
                 f"Wilcoxon p = {row['p_wilcoxon']:.3g}.")
    return text


def attach_listening(rows: list[dict], samples: list[dict[str, dict]], test_dirs: list[Path]) -> list[dict]:
    """Fill the human cells of ``rows`` (``rows[i]`` is the run whose per-pair rows are ``samples[i]``); return
    the extra rows (natural recordings) to put after the runs."""
    extra: dict[str, dict] = {}
    kinds: dict[str, Path] = {}
    for test_dir in test_dirs:
        summary = load_summary(test_dir)
        kind = summary["kind"]
        if kind in kinds:
            raise ClonebenchError(f"--listening {test_dir} and {kinds[kind]} are both {kind} tests; give one per kind")
        kinds[kind] = Path(test_dir)
        if not summary["raters"]["kept"]:
            raise ClonebenchError(f"--listening {test_dir}: no rater was kept by the screening; nothing to report")
        by_code = {s["code"]: s for s in summary["systems"]}
        runs = [s for s in summary["systems"] if s["role"] == "run"]
        matched = {s["code"]: [i for i, pairs in enumerate(samples) if _matches(s, pairs)] for s in runs}
        if not any(matched.values()):
            raise ClonebenchError(f"--listening {test_dir}: none of its systems ({', '.join(s['label'] for s in runs)}) "
                                  "is a run of this report (no run holds the clips it presented); give its runs")
        note = _note(summary)
        missing = [by_code[c]["label"] for c, found in matched.items() if not found]
        if missing:
            note += f" Not in this table: {', '.join(missing)}."
        for code, found in matched.items():
            for i in found:
                rows[i].setdefault("notes", []).append(note)
        if kind not in COLUMN:
            continue
        # arena: the rank (1 = best) with its bootstrap 95 % interval, a whole number
        ranked = [{"condition": r["condition"], "mean": r["rank"], "ci": r["rank_ci"], "digits": 0}
                  for r in (summary.get("arena") or {}).get("systems", [])]
        for score in summary["scores"] or ranked:
            cell = {"mean": score["mean"], "ci": score["ci"], "raters": summary["raters"]["kept"],
                    **({"digits": 0} if "digits" in score else {})}
            for i in matched.get(score["condition"], []):
                rows[i]["cells"][COLUMN[kind]] = cell
            if score["condition"] == NATURAL:
                row = extra.setdefault(NATURAL, {"name": "natural recordings (listening test)", "source": "natural",
                                                 "cells": {}, "notes": [note]})
                row["cells"][COLUMN[kind]] = {**cell, "reference": True}
    return list(extra.values())
