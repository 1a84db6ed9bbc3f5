"""Export what a model must generate: the reference recordings and texts of the pairs, as prompts.jsonl,
prompts.tsv (ZipVoice --test-list) and prompts.lst (Seed-TTS-eval meta list), exactly as ``rvcbench prompts``
writes them (for a suite, also its suite.json). Target recordings are never exported.

    clonebench prompts --manifest M [--root DIR] [--task NAME] --output DIR
    clonebench prompts --suite S [--tasks T ...] --data-root DIR --output DIR
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from clonebench.cli import pair_source
from clonebench.external.prompts import export_prompts


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pair_source.add_arguments(parser)
    parser.add_argument("--output", type=Path, required=True, help="a new (or empty) folder")


def run(args: argparse.Namespace) -> int:
    sets = pair_source.pair_sets(args)
    suite = pair_source.suite(args)
    result = export_prompts(sets, args.output, pair_source.source_arguments(args),
                            suite.upstream_record() if suite is not None else None)
    print(json.dumps(result, indent=2, ensure_ascii=False))
    print(f"Generate the {result['prompts']} utterances listed in {args.output / 'prompts.jsonl'} (or prompts.tsv / "
          f"prompts.lst for batch scripts) as <id>.wav files in one folder; see {args.output / 'README.md'}.")
    return 0
