#!/usr/bin/env python
"""Write the paper's published tables into reproduction/paper/ (published values, never runs of ours):

- published_tables.json (paper v2): from the shared paper tables (18 models, the LibriTTS table and the SIM of
  the other conditions);
- published_tables_v3.json (paper v3, arXiv 2602.00443v3): from the README of the pinned rvcbench 2.2.1 wheel
  (its METADATA): the results table (SIM, MOS, WER, MCD on LibriTTS; VCTK, Chinese and cross-lingual SIM; 22
  models, † = reported in the paper's appendix, e.g. Fish Audio S2) and the protection table (SIM under
  SafeSpeech, SPEC, Enkidu, Gaussian and POP).

The project's schema: one entry per table (condition) with its rows (model + metric values exactly as
published), the metric directions, the paper version, and a marker that these are published numbers.

    python scripts/build_paper_tables.py [--paper v2|v3|all] [--tables ../shared/reference/paper_tables.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from clonebench.core.atomic import atomic_write_json  # noqa: E402

OUTPUT = REPO / "reproduction" / "paper" / "published_tables.json"
OUTPUT_V3 = REPO / "reproduction" / "paper" / "published_tables_v3.json"
HIGHER_IS_BETTER = {"SIM": True, "WER": False, "MOS": True, "MCD": False, "RTF": False, "SVA": True, "Emotion": True}
DAGGER = "\u2020"


def build(tables: dict) -> dict:
    out = {}
    for condition, rows in tables.items():
        metrics = sorted({k for row in rows for k in row if k != "model"})
        out[condition] = {"metrics": metrics,
                          "higher_is_better": {m: HIGHER_IS_BETTER.get(m) for m in metrics},
                          "rows": [{"model": row["model"], **{m: row.get(m) for m in metrics}} for row in rows]}
    return {"schema": "clonebench.paper_tables/v1", "source": "published", "paper_version": "v2", "note": (
        "Values as published in the paper's tables (18 models). MOS there is the paper's MOS model, not DNSMOS; "
        "SIM is ECAPA-based as in clonebench. These are not runs of this harness."), "tables": out}


def _markdown_table(lines: list[str], start: int) -> tuple[list[str], list[list[str]]]:
    """The Markdown table beginning at or after ``lines[start]``: its header cells and its body rows."""
    begin = next(i for i in range(start, len(lines)) if lines[i].startswith("|"))
    end = next((i for i in range(begin, len(lines)) if not lines[i].startswith("|")), len(lines))
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines[begin:end]]
    return rows[0], rows[2:]  # rows[1] is the |---| separator


def _value(text: str) -> tuple[float, bool]:
    bold = text.startswith("**") and text.endswith("**")
    return float(text.strip("*")), bold


def _table(header: list[str], body: list[list[str]], directions: dict[str, bool | None]) -> dict:
    metrics = [h.replace("\u2191", "").replace("\u2193", "").strip() for h in header[1:]]
    rows = []
    for cells in body:
        name = cells[0]
        row = {"model": name.replace(DAGGER, "").strip(), "appendix": DAGGER in name}
        bold = []
        for metric, text in zip(metrics, cells[1:]):
            row[metric], is_bold = _value(text)
            if is_bold:
                bold.append(metric)
        row["bold_in_source"] = bold
        rows.append(row)
    return {"metrics": metrics, "higher_is_better": {m: directions.get(m) for m in metrics}, "rows": rows}


def build_v3(readme: str, source: dict) -> dict:
    """The v3 tables from the rvcbench README (the wheel's METADATA)."""
    lines = readme.splitlines()
    results_at = next(i for i, line in enumerate(lines) if line.strip() == "## Results")
    version_line = next(line for line in lines[results_at:results_at + 5] if "arXiv" in line)
    version = version_line.split("arXiv", 1)[1].split(")")[0].strip()
    if version != "v3":
        raise SystemExit(f"the README's results are from arXiv {version}, not v3: {version_line!r}")
    header, body = _markdown_table(lines, results_at)
    directions = {m.replace("\u2191", "").replace("\u2193", "").strip(): "\u2191" in m for m in header[1:]}
    protection_at = next(i for i, line in enumerate(lines) if "under anti-cloning protection" in line)
    p_header, p_body = _markdown_table(lines, protection_at)
    return {"schema": "clonebench.paper_tables/v1", "source": "published", "paper_version": "v3",
            "paper": "arXiv 2602.00443v3", "derived_from": source,
            "note": ("Values as printed in the rvcbench 2.2.1 README (the paper's arXiv v3 results, 2 decimals): SIM, "
                     "MOS, WER and MCD on clean LibriTTS prompts; VCTK, Chinese and cross-lingual speaker similarity; "
                     "'appendix' marks models reported in the paper's appendix (\u2020); 'bold_in_source' the "
                     "README's bold. These are not runs of this harness."),
            "tables": {"results": _table(header, body, directions),
                       "protection_SIM": {**_table(p_header, p_body, {}), "note": (
                           "SIM on LibriTTS with protected references; a lower SIM means the protection hides the "
                           "speaker better (the README's bold marks the lowest)")}}}


def wheel_readme() -> tuple[str, dict]:
    import hashlib
    import importlib.metadata

    dist = importlib.metadata.distribution("rvcbench")
    if dist.version != "2.2.1":
        raise SystemExit(f"rvcbench {dist.version} is installed; the v3 tables come from 2.2.1's README")
    path = next(f for f in dist.files if str(f).endswith(".dist-info/METADATA"))
    data = path.locate().read_bytes()
    return data.decode("utf-8"), {"distribution": "rvcbench", "version": dist.version, "file": str(path),
                                  "sha256": hashlib.sha256(data).hexdigest()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paper", choices=("v2", "v3", "all"), default="all")
    parser.add_argument("--tables", type=Path, default=REPO.parent / "shared" / "reference" / "paper_tables.json")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="the v2 file")
    parser.add_argument("--output-v3", type=Path, default=OUTPUT_V3, help="the v3 file")
    args = parser.parse_args(argv)
    if args.paper in ("v2", "all"):
        payload = build(json.loads(args.tables.read_text()))
        atomic_write_json(args.output, payload)
        print(f"wrote {args.output} ({len(payload['tables'])} tables, paper v2)")
    if args.paper in ("v3", "all"):
        payload = build_v3(*wheel_readme())
        atomic_write_json(args.output_v3, payload)
        print(f"wrote {args.output_v3} ({len(payload['tables']['results']['rows'])} models, paper v3)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
