"""Paper tables: rows = runs (and, on request, the paper's published rows), the paper's columns SIM↑ WER↓ MOS↑
MCD↓ RTF↓ SVA↑ Emo↑ plus DNSMOS↑. A run fills every column it has: MOS and Emo from its scorers (marked † while
those scorers are unverified), RTF from a timing run of the same pairs and server (``report.rtf``)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from clonebench.core.paths import REPRODUCTION_DIR
from clonebench.report.format import is_percent, latex_escape, metric_number
from clonebench.report.tables import UNSEEDED_NOTE, ResultTable

COLUMNS = [("sim", "SIM↑", True), ("wer", "WER↓", False), ("mos", "MOS↑", True), ("mcd", "MCD↓", False),
           ("rtf", "RTF↓", False), ("sva", "SVA↑", True), ("emotion_match", "Emo↑", True), ("dnsmos", "DNSMOS↑", True)]
PAPER_FILE = REPRODUCTION_DIR / "paper" / "published_tables.json"
PAPER_KEYS = {"sim": "SIM", "wer": "WER", "mos": "MOS", "mcd": "MCD", "rtf": "RTF", "sva": "SVA",
              "emotion_match": "Emotion"}  # the paper's MOS is UTMOS, not DNSMOS
# human listening-test scores (clonebench listening-results; report --listening), shown right after the predicted MOS
HUMAN_COLUMNS = [("human_mos", "MOS (human)↑", True), ("human_smos", "SMOS (human)↑", True),
                 ("human_mushra", "MUSHRA (human)↑", True), ("human_arena", "Arena rank (human)↓", False)]
# the failure rate (share of utterances with a failure flag, failures/): shown as a percentage, after the paper's
# columns, only when some row has it (a run scored without ``fail`` shows no such column)
FAILURE_COLUMN = ("fail", "fail%↓", False)
# Seed-TTS-eval's own protocol (docs/seed-tts-eval.md), beside RVCBench's when a run has it: WER in %, SIM with the
# prompt from WavLM-large (not comparable with the ECAPA SIM column)
SEEDTTS_COLUMNS = [("seed_wer_en", "Seed WER-en%↓", False), ("seed_wer_zh", "Seed WER-zh%↓", False),
                   ("seed_sim", "Seed SIM-o↑", True)]
OPTIONAL_COLUMNS = [FAILURE_COLUMN, *SEEDTTS_COLUMNS]
PUBLISHED_SOURCES = ("paper",)
PUBLISHED_LABEL = "published (other data)"  # the heading of the published rows' block; never bold
BASE_NOTE = ("SIM = ECAPA cosine (not WavLM SIM); 95 % utterance-bootstrap CIs; (published) rows are the paper's "
             "values, not runs of this harness.")
RATE_NOTE = "fail%: 95 % Wilson score interval (a bootstrap of 0/1 values collapses to [0, 0] when none failed)."


def shown_columns(rows: list[dict], columns: list = COLUMNS) -> list[tuple[str, str, bool]]:
    """``columns``, plus the human listening-test columns some row fills, placed after the predicted MOS, and the
    failure rate at the end when some row has it."""
    present = {key for row in rows for key in row["cells"]}
    out = []
    for column in columns:
        out.append(column)
        if column[0] == "mos":
            out += [c for c in HUMAN_COLUMNS if c[0] in present]
    keys = {c[0] for c in out}
    return out + [c for c in OPTIONAL_COLUMNS if c[0] in present and c[0] not in keys]


def run_rows(tables: list[ResultTable], columns: list = COLUMNS) -> list[dict]:
    rows = []
    for table in tables:
        label = table.label + (" (partial)" if table.status != "complete" else "") \
            + (" (no seed)" if table.unseeded_server else "")
        row = {"name": label, "source": "run", "cells": {}, "notes": []}
        if table.unseeded_server:
            row["notes"].append(f"{table.label}: {UNSEEDED_NOTE}")
        for key, _, _ in [*columns, *(c for c in OPTIONAL_COLUMNS if c not in columns)]:
            entry = table.metrics_summary.get(key)
            if isinstance(entry, dict) and entry.get("mean") is not None:
                row["cells"][key] = {"mean": entry["mean"], "ci": entry.get("ci"), "n": entry["n_valid"],
                                     "n_requested": entry["n_requested"]}
                if key == FAILURE_COLUMN[0]:  # a rate: its Wilson interval (failures/rates.py), as every page shows
                    row["cells"][key]["ci"] = (table.failure_modes or {}).get("ci")
                if is_percent(key):
                    row["cells"][key]["percent"] = key
                reason = unverified_reason(key)
                if reason:
                    row["cells"][key]["unverified"] = True
                    row["notes"].append(f"† {key}: {reason}")
        rows.append(row)
    return rows


def paper_rows(condition: str = "LibriTTS", path: Path = PAPER_FILE) -> list[dict]:
    table = json.loads(path.read_text())["tables"][condition]
    return [{"name": f"{r['model']} (published)", "source": "paper",
             "cells": {k: {"mean": r[v]} for k, v in PAPER_KEYS.items() if r.get(v) is not None}}
            for r in table["rows"]]


def unverified_reason(metric: str) -> str | None:
    from clonebench.evaluate.protocols.registry import METRIC_GROUPS, UNVERIFIED

    return UNVERIFIED.get(METRIC_GROUPS.get(metric, ""))


def footnotes(rows: list[dict]) -> list[str]:
    """The table's footnotes: the base note, then each distinct row note (unverified scorers, RTF scope)."""
    notes = [BASE_NOTE] + ([RATE_NOTE] if any(FAILURE_COLUMN[0] in row["cells"] for row in rows) else [])
    for row in rows:
        notes += [n for n in row.get("notes", []) if n not in notes]
    return notes


def is_published(row: dict) -> bool:
    """A published row (the paper's values): measured on other data with another protocol, so context for the
    table, never a competitor of its runs."""
    return row.get("source") in PUBLISHED_SOURCES


def split_rows(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(the rows measured here: runs, suite runs, listening tests; the published rows), each in table order."""
    return [r for r in rows if not is_published(r)], [r for r in rows if is_published(r)]


def best(rows: list[dict], columns: list = COLUMNS) -> dict[str, float]:
    """Per column, the best value among the rows that share data and protocol (the measured rows): a published row
    is never best and never keeps a run from being best."""
    out = {}
    measured, _ = split_rows(rows)
    for key, _, higher in shown_columns(rows, columns):
        # an unverified scorer's value, and a reference's (the natural recordings' human score), is never "best"
        values = [r["cells"][key]["mean"] for r in measured if key in r["cells"]
                  and not r["cells"][key].get("unverified") and not r["cells"][key].get("reference")]
        if values:
            out[key] = max(values) if higher else min(values)
    return out


def is_best(cell: dict | None, top: dict, key: str, row: dict | None = None) -> bool:
    if row is not None and is_published(row):
        return False
    return bool(cell) and not cell.get("unverified") and not cell.get("reference") and cell["mean"] == top.get(key)


def _value(cell: dict, value: float, digits: int = 3) -> str:
    """A cell's number: a rate (``percent``) x100 with one decimal, else ``digits`` decimals (the cell's own
    ``digits`` when it has them: an arena rank is a whole number)."""
    return metric_number(cell.get("percent") or "", value, cell.get("digits", digits))


def _cell(cell: dict | None, digits: int = 3, with_ci: bool = True) -> str:
    if not cell:
        return "–"
    text = _value(cell, cell["mean"], digits)
    if with_ci and cell.get("ci"):
        text += f" [{_value(cell, cell['ci'][0], digits)}, {_value(cell, cell['ci'][1], digits)}]"
    if cell.get("n") is not None:
        text += f" (n={cell['n']}/{cell['n_requested']})"
    if cell.get("raters") is not None:
        text += f" (human, {cell['raters']} raters)"
    return text + (" †" if cell.get("unverified") else "")


def markdown(rows: list[dict], columns: list = COLUMNS) -> str:
    top, shown = best(rows, columns), shown_columns(rows, columns)
    measured, published = split_rows(rows)
    lines = ["| model | " + " | ".join(h for _, h, _ in shown) + " |", "|---" * (len(shown) + 1) + "|"]
    for row in measured + published:
        if published and row is published[0]:  # the published block, set apart under its own label
            lines.append(f"| *{PUBLISHED_LABEL}* |" + " |" * len(shown))
        cells = []
        for key, _, _ in shown:
            text = _cell(row["cells"].get(key))
            cells.append(f"**{text}**" if is_best(row["cells"].get(key), top, key, row) else text)
        lines.append(f"| {row['name']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n" + "\n".join(footnotes(rows)) + "\n"


def latex(rows: list[dict], columns: list = COLUMNS) -> str:
    top, shown = best(rows, columns), shown_columns(rows, columns)
    header = " & ".join(["Model"] + [latex_escape(h).replace("↑", r"$\uparrow$").replace("↓", r"$\downarrow$")
                                     for _, h, _ in shown])
    lines = [r"\begin{tabular}{l" + "c" * len(shown) + "}", r"\toprule", header + r" \\", r"\midrule"]
    measured, published = split_rows(rows)
    for row in measured + published:
        if published and row is published[0]:  # the published block, set apart under its own label
            lines += ([r"\midrule"] if measured else []) + \
                [rf"\multicolumn{{{len(shown) + 1}}}{{l}}{{\textit{{{latex_escape(PUBLISHED_LABEL)}}}}} \\"]
        cells = []
        for key, _, _ in shown:
            cell = row["cells"].get(key)
            text = "--" if not cell else _value(cell, cell["mean"])
            if cell and cell.get("ci"):
                text += rf"\,{{\scriptsize[{_value(cell, cell['ci'][0])}, {_value(cell, cell['ci'][1])}]}}"
            if is_best(cell, top, key, row):
                text = rf"\textbf{{{text}}}"
            if cell and cell.get("unverified"):
                text += r"$^\dagger$"
            cells.append(text)
        lines.append(" & ".join([latex_escape(row["name"])] + cells) + r" \\")
    # footnotes hold labels (listening-test systems, suites): escaped, so a newline cannot leave the comment
    lines += [r"\bottomrule", r"\end{tabular}"] + ["% " + latex_escape(n) for n in footnotes(rows)]
    return "\n".join(lines) + "\n"


def csv_text(rows: list[dict], columns: list = COLUMNS) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header, shown = ["model", "source"], shown_columns(rows, columns)
    for key, _, _ in shown:
        header += [key, f"{key}_ci_low", f"{key}_ci_high", f"{key}_n"]
    writer.writerow(header)
    for row in rows:
        out = [row["name"], row["source"]]
        for key, _, _ in shown:
            cell = row["cells"].get(key) or {}
            ci = cell.get("ci") or [None, None]
            out += [cell.get("mean"), ci[0], ci[1], cell.get("n", cell.get("raters"))]
        writer.writerow(["" if v is None else v for v in out])
    return buffer.getvalue()
