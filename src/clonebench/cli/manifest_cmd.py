"""Print a manifest's input fingerprint and, per selected pair, its sample id and seed (JSON).

Without --root the fingerprint uses the audio hashes the manifest declares; with --root every
audio file is read, verified against those hashes, and validated.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from clonebench.config.settings import DEFAULT_SEED
from clonebench.data.identity import input_fingerprint
from clonebench.data.manifest import Selection, build_samples


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("manifest", type=Path, help="JSON or CSV pair manifest")
    parser.add_argument("--root", type=Path, help="dataset root: verify the audio files' hashes")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="run seed (default %(default)s)")
    parser.add_argument("--variant", default="speaker",
                        help="manifest_variant to select ('all' for every row; default %(default)s)")
    parser.add_argument("--speaker", help="select one speaker id")


def run(args: argparse.Namespace) -> int:
    selection = Selection(None if args.variant == "all" else args.variant, args.speaker)
    samples = build_samples(args.manifest, args.root, selection, args.seed, verify_audio_files=args.root is not None,
                            variant_key="--variant all")
    print(json.dumps({
        "manifest": str(args.manifest),
        "input_fingerprint": input_fingerprint(samples),
        "audio_verified": args.root is not None,
        "samples": [{"pair_id": s.pair_id, "sample_id": s.sample_id, "seed": s.seed} for s in samples],
    }, indent=2))
    return 0
