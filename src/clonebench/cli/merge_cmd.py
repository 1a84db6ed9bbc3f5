"""Merge the shard runs of a sweep (``python run_vc.py -m ... 'vc.shard.index=range(0,N)'``) into one run.

    clonebench merge SWEEP_DIR [--output DIR]     (default: SWEEP_DIR/merged)

Refuses shards that overlap, miss pairs, ran with other configs or were scored differently.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from clonebench.runs.merge import merge


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep_dir", type=Path)
    parser.add_argument("--output", type=Path)


def run(args: argparse.Namespace) -> int:
    out = merge(args.sweep_dir, args.output)
    print(f"merged into {out}")
    return 0
