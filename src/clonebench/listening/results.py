"""``clonebench listening-results``: the key and the raters' files in, the test's results out.

Writes ``DIR/results.json`` (what ``clonebench report --listening DIR`` reads) and ``DIR/ratings_long.csv`` (one
row per answer, with the system each opaque clip id stands for, for any further analysis)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from clonebench.core.atomic import atomic_write_json, atomic_write_text
from clonebench.core.errors import ClonebenchError
from clonebench.core.hashing import sha256_file
from clonebench.listening import agreement
from clonebench.listening import arena as arena_results
from clonebench.listening.build import KEY
from clonebench.listening.design import ANCHOR, NATURAL
from clonebench.listening.ratings import Sheet, load_key, load_sheets
from clonebench.listening.screening import arena_value, oriented, screen
from clonebench.stats import raters as stats

RESULTS, LONG = "results.json", "ratings_long.csv"
RESULTS_SCHEMA = "clonebench.listening.results/v1"


def answers(key: dict, sheet: Sheet) -> list[dict]:
    """Every answer of one rater to a test trial, resolved: condition (system code or CMOS comparison), value."""
    out = []
    for trial in key["trials"]:
        if trial["phase"] != "test":
            continue
        record = sheet.records[trial["trial_id"]]
        base = {"rater": sheet.rater, "trial": trial["trial_id"], "type": trial["type"], "item": trial["item"],
                "position": record["position"], "time_ms": record["answered_ms"] - record["shown_ms"]}
        if key["kind"] == "mushra":
            for clip, value in zip(record["clips"], record["ratings"]):
                out.append({**base, "clip": clip, "condition": key["clips"][clip]["system"], "value": value,
                            "shown": "|".join(record["clips"])})
        elif key["kind"] in ("cmos", "arena"):
            condition = " vs ".join(reversed(trial["systems"])) if trial["systems"] else None
            value = arena_value(key, trial, record) if key["kind"] == "arena" else \
                oriented(key, trial, record) if trial["systems"] else record["rating"]
            out.append({**base, "clip": "|".join(record["clips"]), "condition": condition, "value": value,
                        "raw": record["rating"], "shown": "|".join(record["clips"])})
        else:
            clip = record["clips"][0]
            out.append({**base, "clip": clip, "condition": key["clips"][clip]["system"], "value": record["rating"],
                        "shown": "|".join(record["clips"])})
    return out


def grids(key: dict, rows: list[dict], raters: list[str]) -> dict[str, np.ndarray]:
    """raters x items grid per condition, from the kept raters' rating trials."""
    items = [i["pair_id"] for i in key["sampling"]["items"]]
    conditions = sorted({r["condition"] for r in rows if r["type"] == "rating" and r["condition"]}, key=_order)
    out = {c: np.full((len(raters), len(items)), np.nan) for c in conditions}
    for row in rows:
        if row["type"] == "rating" and row["rater"] in raters and row["condition"]:
            out[row["condition"]][raters.index(row["rater"]), items.index(row["item"])] = row["value"]
    for name, grid in out.items():
        if np.isnan(grid).any():
            raise ClonebenchError(f"condition {name}: {int(np.isnan(grid).sum())} rater x item cells without an "
                                  "answer; the key and the files disagree")
    return out


def _order(condition: str) -> tuple:
    return (condition in (NATURAL, ANCHOR), condition == ANCHOR, condition)


def units(rows: list[dict], raters: list[str]) -> np.ndarray:
    keys = sorted({(r["trial"], r["clip"]) for r in rows if r["type"] == "rating"})
    matrix = np.full((len(raters), len(keys)), np.nan)
    for row in rows:
        if row["type"] == "rating" and row["rater"] in raters:
            matrix[raters.index(row["rater"]), keys.index((row["trial"], row["clip"]))] = row["value"]
    return matrix


def analyse(test_dir: Path, paths: list[Path], draws: int = stats.DRAWS) -> dict:
    key = load_key(test_dir)
    sheets = load_sheets(key, [Path(p) for p in paths])
    verdicts = screen(key, sheets)
    kept = [v.rater for v in verdicts if v.kept]
    rows = [row for sheet in sheets for row in answers(key, sheet)]
    labels = {s["code"]: s["label"] for s in key["systems"]}
    summary = {"schema": RESULTS_SCHEMA, "test_id": key["test_id"], "kind": key["kind"], "title": key["title"],
               "key_sha256": sha256_file(Path(test_dir) / KEY), "systems": key["systems"],
               "raters": {"given": len(sheets), "kept": len(kept),
                          "excluded": [{"rater": v.rater, "file": v.path, "reason": v.reason}
                                       for v in verdicts if not v.kept]},
               "screening": key["screening"], "items": len(key["sampling"]["items"]),
               "files": [{"path": str(s.path), "sha256": s.sha256, "rater": s.rater, "user_agent": s.user_agent}
                         for s in sheets],
               "ci_method": f"two-way bootstrap over raters x items (Owen 2007), {draws} draws, seed {stats.SEED}, "
                            "percentile 95 % CI",
               "test_method": "Wilcoxon signed-rank over items (per-item means over raters), two-sided, "
                              "Holm-adjusted"}
    if not kept:
        summary.update(scores=[], differences=[], cmos=[], agreement=None)
        if key["kind"] == "arena":
            summary["arena"] = None
        return {"summary": summary, "rows": rows, "labels": labels}
    table = grids(key, rows, kept) if key["kind"] != "arena" else {}
    if key["kind"] == "arena":  # pairs dealt over items: no full grid per comparison; ranked, not scored
        summary.update(scores=[], differences=[], cmos=[],
                       arena=arena_results.summarise(key, rows, kept, labels, draws))
        summary["ci_method"] = summary["arena"]["method"]["ci"]
        summary["test_method"] = f"none (CIs of the strength differences; {summary['arena']['method']['model']})"
    elif key["kind"] == "cmos":
        summary.update(scores=[], differences=[], cmos=stats.cmos(table, draws))
        for row in summary["cmos"]:
            second, first = row["condition"].split(" vs ")
            row.update(first=first, second=second,
                       label=f"{labels.get(second, second)} vs {labels.get(first, first)}")
    else:
        found, boots = stats.scores(table, draws)
        for row in found:
            row["label"] = labels.get(row["condition"], row["condition"])
        compared = [c for c in table if c != ANCHOR]
        pairs = [(a, b) for i, a in enumerate(compared) for b in compared[i + 1:]]
        diffs = stats.differences(table, boots, pairs)
        for row in diffs:
            row["label"] = f"{labels.get(row['b'], row['b'])} − {labels.get(row['a'], row['a'])}"
        summary.update(scores=found, differences=diffs, cmos=[])
    matrix = units(rows, kept)
    summary["agreement"] = {"krippendorff_alpha": agreement.alpha(matrix, key["kind"]),
                            "level": agreement.level(key["kind"]), "units": int(matrix.shape[1]),
                            "raters": len(kept)}
    return {"summary": summary, "rows": rows, "labels": labels}


def long_csv(rows: list[dict], labels: dict, kept: set[str]) -> str:
    buffer = io.StringIO()
    fields = ["rater", "kept", "trial", "type", "item", "condition", "system", "clip", "value", "raw", "position",
              "time_ms", "shown"]
    writer = csv.DictWriter(buffer, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        system = " vs ".join(labels.get(c, c) for c in row["condition"].split(" vs ")) if row["condition"] else ""
        writer.writerow({**row, "kept": row["rater"] in kept, "system": system})
    return buffer.getvalue()


def write_results(test_dir: Path, paths: list[Path], draws: int = stats.DRAWS) -> dict:
    result = analyse(test_dir, paths, draws)
    summary = result["summary"]
    kept = {f["rater"] for f in summary["files"]} - {e["rater"] for e in summary["raters"]["excluded"]}
    atomic_write_text(Path(test_dir) / LONG, long_csv(result["rows"], result["labels"], kept))
    atomic_write_json(Path(test_dir) / RESULTS, summary)
    return summary
