#!/usr/bin/env python
"""Write reproduction/subsets/libritts16_v1/metadata.json from the shared reference pairs file.

The output is the project's pair-manifest schema (an object with a "pairs" list that
``clonebench.data.manifest`` reads), keeping every pair's hashes, source indices and transcripts,
plus the selection description and each pair's sample id so the subset is auditable without code.

    python scripts/build_reproduction_subset.py [--reference ../shared/reference/libritts16_v1_pairs.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from clonebench.core.atomic import atomic_write_json  # noqa: E402
from clonebench.data.identity import sample_id  # noqa: E402
from clonebench.data.manifest import ROW_FIELDS, parse_row  # noqa: E402

DEFAULT_REFERENCE = REPO.parent / "shared" / "reference" / "libritts16_v1_pairs.json"
OUTPUT = REPO / "reproduction" / "subsets" / "libritts16_v1" / "metadata.json"


def build(reference: dict) -> dict:
    pairs, problems = [], []
    for number, raw in enumerate(reference["pairs"]):
        row = parse_row(raw, f"pairs[{number}]", problems)
        if row is None:
            continue
        entry = {name: getattr(row, name) for name in ROW_FIELDS}
        entry["sample_id"] = sample_id(row)
        pairs.append(entry)
    if problems:
        raise SystemExit("reference file has invalid pairs:\n" + "\n".join(problems))
    return {
        "schema": "clonebench.pairs/v1",
        "subset": "libritts16_v1",
        "description": (
            "LibriTTS 16-pair reproduction subset: 8 speakers x 2 reference->target pairs drawn from the "
            "2,000-pair LibriTTS zero-shot population before any model outcome was looked at. File names are "
            "relative to the LibriTTS evaluation root (pass it as dataset.root_path); prompt = voice reference "
            "sent to the model, target = ground-truth recording of the same speaker saying target_text; "
            "sha256 values are of the WAV files' bytes; per-sample seed = run seed + source_index."
        ),
        "selection": reference.get("selection", {}),
        "pairs": pairs,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, default=DEFAULT_REFERENCE)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    payload = build(json.loads(args.reference.read_text(encoding="utf-8")))
    atomic_write_json(args.output, payload)
    print(f"wrote {args.output} ({len(payload['pairs'])} pairs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
