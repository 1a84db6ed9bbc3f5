#!/usr/bin/env python
"""Write reproduction/seedtts/published_table.json from reproduction/seedtts/published_sources.csv: the
Seed-TTS-eval numbers papers printed (WER in %, SIM-o), one entry per system and test set, each with its citation.

The CSV is the project's own data file: one row per (system, test set) with the value as the paper printed it, the
paper (arXiv id) and its table, and what it was checked against. A cell is left empty when its value could not be
checked here; it is then shown as "–", never guessed. These are published numbers under the benchmark's own scripts
(missing outputs skipped), not runs of this harness.

    python scripts/build_seedtts_published.py [--sources CSV] [--output JSON]
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from clonebench.core.atomic import atomic_write_json  # noqa: E402

SOURCES = REPO / "reproduction" / "seedtts" / "published_sources.csv"
OUTPUT = REPO / "reproduction" / "seedtts" / "published_table.json"
TEST_SETS = ("test-zh", "test-en", "test-hard")


def number(text: str, where: str) -> float | None:
    if not text.strip():
        return None
    try:
        return float(text)
    except ValueError:
        raise SystemExit(f"{where}: {text!r} is not a number") from None


def build(sources: Path) -> dict:
    systems: dict[str, dict] = {}
    with open(sources, newline="", encoding="utf-8") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            where = f"{sources}:{line}"
            if row["test_set"] not in TEST_SETS:
                raise SystemExit(f"{where}: test_set {row['test_set']!r} is not one of {TEST_SETS}")
            entry = systems.setdefault(row["system"], {"system": row["system"], "results": {}, "sources": []})
            if row["test_set"] in entry["results"]:
                raise SystemExit(f"{where}: {row['system']} {row['test_set']} is given twice")
            entry["results"][row["test_set"]] = {"wer_percent": number(row["wer_percent"], where),
                                                 "sim": number(row["sim"], where)}
            cited = {"source": row["source"], "where": row["where"], "checked_against": row["checked_against"]}
            if cited not in entry["sources"]:
                entry["sources"].append(cited)
    return {"schema": "clonebench.seedtts_published/v1", "published": True,
            "protocol": "the benchmark's own scripts (missing outputs skipped); WER in %, SIM with the prompt",
            "test_sets": list(TEST_SETS), "systems": list(systems.values())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", type=Path, default=SOURCES)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    table = build(args.sources)
    atomic_write_json(args.output, table)
    print(f"wrote {args.output}: {len(table['systems'])} systems")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
