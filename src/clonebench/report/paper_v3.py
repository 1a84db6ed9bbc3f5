"""The paper's v3 results table (arXiv 2602.00443v3, as printed in the rvcbench 2.2.1 README): SIM, MOS, WER and MCD
on clean LibriTTS prompts, then speaker similarity on VCTK, Chinese (AISHELL-1) and cross-lingual pairs; 22 models,
† for models reported in the paper's appendix (Fish Audio S2 among them). clonebench's run-only columns (RTF,
SVA, Emo, DNSMOS) follow. A run fills the LibriTTS columns it has; a suite run fills every column from its tasks
(``SUITE_SOURCES``): onboarding-v1's libritts and vctk tasks, core-v1's and full-v1's english-libritts,
audioshift, chinese and crosslingual tasks."""

from __future__ import annotations

import json
from pathlib import Path

from clonebench.core.paths import REPRODUCTION_DIR
from clonebench.report.paper import unverified_reason

COLUMNS_V3 = [("sim", "SIM↑", True), ("mos", "MOS↑", True), ("wer", "WER↓", False), ("mcd", "MCD↓", False),
              ("vctk_sim", "VCTK SIM↑", True), ("chinese_sim", "Chinese SIM↑", True),
              ("crosslingual_sim", "Cross-lingual SIM↑", True),
              ("rtf", "RTF↓", False), ("sva", "SVA↑", True), ("emotion_match", "Emo↑", True), ("dnsmos", "DNSMOS↑", True)]
PAPER_V3_FILE = REPRODUCTION_DIR / "paper" / "published_tables_v3.json"
V3_KEYS = {"sim": "SIM", "mos": "MOS", "wer": "WER", "mcd": "MCD", "vctk_sim": "VCTK SIM",
           "chinese_sim": "Chinese SIM", "crosslingual_sim": "Cross-lingual SIM"}
PUBLISHED_NOTE = ("(published) rows: the paper's arXiv v3 values as printed in the rvcbench 2.2.1 README (2 decimals; "
                  "MOS is the paper's UTMOS); † = reported in the paper's appendix")
# column -> (the suite tasks that give it, in order of preference; the task's metric, rvcbench name)
SUITE_SOURCES = {"sim": (("libritts", "english-libritts"), "sim"), "mos": (("libritts", "english-libritts"), "speechmos"),
                 "wer": (("libritts", "english-libritts"), "wer"), "mcd": (("libritts", "english-libritts"), "mcd"),
                 "sva": (("libritts", "english-libritts"), "sva"),
                 "emotion_match": (("libritts", "english-libritts"), "emotion"),
                 "vctk_sim": (("vctk", "audioshift"), "sim"), "chinese_sim": (("chinese",), "sim"),
                 "crosslingual_sim": (("crosslingual",), "sim"),
                 "fail": (("libritts", "english-libritts"), "fail")}  # shown only when a task scored it (paper.py)


def paper_rows_v3(path: Path = PAPER_V3_FILE) -> list[dict]:
    table = json.loads(Path(path).read_text())["tables"]["results"]
    return [{"name": f"{r['model']}{' †' if r['appendix'] else ''} (published)", "source": "paper",
             "cells": {k: {"mean": r[v]} for k, v in V3_KEYS.items() if r.get(v) is not None},
             "notes": [PUBLISHED_NOTE]} for r in table["rows"]]


def suite_row(results) -> dict:
    """A suite run as one table row: each column from the first of its source tasks that has the metric."""
    label = results.model + ("" if results.status == "complete" else " (partial)")
    row = {"name": f"{label} [{results.suite.name}]", "source": "suite", "cells": {}, "notes": []}
    names = {t.name: t for t in results.tasks}
    for column, (tasks, metric) in SUITE_SOURCES.items():
        for name in tasks:
            task = names.get(name)
            stat = task.metrics.get(metric) if task else None
            if stat is None or stat.mean is None:
                continue
            row["cells"][column] = {"mean": stat.mean, "ci": stat.ci, "n": stat.n_valid,
                                    "n_requested": stat.n_requested}
            if column == "fail":
                row["cells"][column]["percent"] = "fail"
            row["notes"].append(f"{column}: suite {results.suite.name} task {name}")
            reason = unverified_reason("mos" if metric == "speechmos" else metric)
            if reason:
                row["cells"][column]["unverified"] = True
                row["notes"].append(f"† {column}: {reason}")
            break
    return row
