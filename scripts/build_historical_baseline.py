#!/usr/bin/env python
"""Write reproduction/historical/fish_s2_http_libritts16.json from the shared historical scores.

Joins the historical per-pair MCD/WER/SIM with the libritts16 pairs (by pair id) so that the project's
file carries what a comparison must verify (speaker, target transcript, both input audio hashes, sample
id), states the scorer protocol each metric was made with in the structured form the evaluate phase
records (``protocol``), and lists the limits of the baseline.

    python scripts/build_historical_baseline.py [--scores ../shared/reference/fish_s2_historical_libritts16.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from clonebench.core.atomic import atomic_write_json  # noqa: E402
from clonebench.evaluate.protocols.locks import ECAPA, OPENAI_WHISPER_SHA256  # noqa: E402
from clonebench.evaluate.scorers.whisper_common import DECODING  # noqa: E402

SHARED = REPO.parent / "shared" / "reference"
PAIRS = REPO / "reproduction" / "subsets" / "libritts16_v1" / "metadata.json"
OUTPUT = REPO / "reproduction" / "historical" / "fish_s2_http_libritts16.json"

PROTOCOLS = {
    "mcd": {"group": "mcd", "protocol": {"implementation": "pymcd", "mode": "dtw", "parameters": "library defaults"}},
    "wer": {"group": "whisper", "protocol": {"backend": "openai_whisper", "model": "medium",
                                             "weights_sha256": OPENAI_WHISPER_SHA256["medium"], "decoding": DECODING,
                                             "normalisation": "ascii_punctuation_removed_v2"}},
    "sim": {"group": "ecapa", "protocol": {"model": ECAPA.asset_id, "revision": ECAPA.revision,
                                           "score": "verify_batch cosine", "threshold": 0.25}},
}
# the override that makes a run's scorer match each protocol field
FIXES = {"backend": "evaluation.whisper.backend", "model": "evaluation.whisper.model",
         "weights_sha256": "evaluation.whisper.local_path (the locked checkpoint)",
         "normalisation": "evaluation.whisper.normalisation", "threshold": "evaluation.ecapa.threshold"}


def build(scores: dict, pairs: dict) -> dict:
    by_id = {p["pair_id"]: p for p in pairs["pairs"]}
    rows = []
    for entry in scores["pairs"]:
        pair = by_id[entry["pair_id"]]
        if pair["speaker_id"] != entry["speaker_id"]:
            raise SystemExit(f"{entry['pair_id']}: speaker {entry['speaker_id']} differs from the subset's")
        rows.append({"pair_id": pair["pair_id"], "speaker_id": pair["speaker_id"], "sample_id": pair["sample_id"],
                     "source_index": pair["source_index"], "target_text": pair["target_text"],
                     "prompt_sha256": pair["prompt_sha256"], "target_sha256": pair["target_sha256"],
                     "generated_audio_sha256": entry["generated_audio_sha256"],
                     "mcd": entry["mcd"], "wer": entry["wer"], "sim": entry["sim"]})
    order = {p["pair_id"]: i for i, p in enumerate(pairs["pairs"])}
    rows.sort(key=lambda r: order[r["pair_id"]])  # manifest order, as the paired bootstrap needs
    return {
        "schema": "clonebench.historical/v1",
        "name": "fish_s2_http_libritts16",
        "subset": "libritts16_v1",
        "model": scores["run"]["model"],
        "description": scores["about"],
        "request": scores["run"]["request"],
        "seed": scores["run"]["seed"],
        "client_device": scores["run"]["client_device"],
        "limits": [
            "no seed was sent: the server's RNG state carried over between requests, so no new run can repeat it",
            "the historical server revision was not recorded (revision 214da3cd was measured later)",
            "historical server weights, runtime and RNG state are not available: differences are expected",
        ],
        "scorers": {metric: {**spec, "description": scores["scorers"][metric]} for metric, spec in PROTOCOLS.items()},
        "protocol_fixes": FIXES,
        "means": scores["means"],
        "pairs": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scores", type=Path, default=SHARED / "fish_s2_historical_libritts16.json")
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    payload = build(json.loads(args.scores.read_text()), json.loads(args.pairs.read_text()))
    atomic_write_json(args.output, payload)
    print(f"wrote {args.output} ({len(payload['pairs'])} pairs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
