#!/usr/bin/env python
"""Write reproduction/paper/published_tables.json from the shared paper tables (published values).

The project's schema: one entry per table (condition) with its rows (model + metric values exactly as
published), the metric directions, and a marker that these are published numbers, not runs of ours.

    python scripts/build_paper_tables.py [--tables ../shared/reference/paper_tables.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from clonebench.atomic import atomic_write_json  # noqa: E402

OUTPUT = REPO / "reproduction" / "paper" / "published_tables.json"
HIGHER_IS_BETTER = {"SIM": True, "WER": False, "MOS": True, "MCD": False, "RTF": False, "SVA": True, "Emotion": True}


def build(tables: dict) -> dict:
    out = {}
    for condition, rows in tables.items():
        metrics = sorted({k for row in rows for k in row if k != "model"})
        out[condition] = {"metrics": metrics,
                          "higher_is_better": {m: HIGHER_IS_BETTER.get(m) for m in metrics},
                          "rows": [{"model": row["model"], **{m: row.get(m) for m in metrics}} for row in rows]}
    return {"schema": "clonebench.paper_tables/v1", "source": "published", "note": (
        "Values as published in the paper's tables (18 models). MOS there is the paper's MOS model, not DNSMOS; "
        "SIM is ECAPA-based as in clonebench. These are not runs of this harness."), "tables": out}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=Path, default=REPO.parent / "shared" / "reference" / "paper_tables.json")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    payload = build(json.loads(args.tables.read_text()))
    atomic_write_json(args.output, payload)
    print(f"wrote {args.output} ({len(payload['tables'])} tables)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
