"""Seed-TTS-eval results of runs over its meta lists, the way papers print them: WER (%) and SIM per test set, with
intervals and coverage (docs/seed-tts-eval.md).

    clonebench seedtts RUN [RUN ...]                 (each run's test set from its meta list's name)
    clonebench seedtts test-en=RUN test-zh=RUN       (or named)
    clonebench seedtts RUN ... --skip-missing        (the benchmark scripts' rule: missing outputs skipped)
    clonebench seedtts RUN ... --format json --output results.json
    clonebench seedtts RUN ... --with-published      (then the numbers papers printed, with their citations)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from clonebench.core.atomic import atomic_write_text
from clonebench.seedtts.published import published_markdown
from clonebench.seedtts.summary import load, markdown


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", help="evaluated runs (RUN or NAME=RUN)")
    parser.add_argument("--skip-missing", action="store_true",
                        help="skip utterances without a score, as the benchmark's scripts do (marked in the output; "
                             "default: count them as failures, WER 100 %% and SIM 0)")
    parser.add_argument("--format", choices=("markdown", "json"), default="markdown")
    parser.add_argument("--with-published", action="store_true",
                        help="add the published numbers (reproduction/seedtts/published_table.json), marked and "
                             "cited, after the runs (markdown only)")
    parser.add_argument("--output", type=Path, help="write here instead of printing")


def run(args: argparse.Namespace) -> int:
    results = load(args.runs, "skip" if args.skip_missing else "count")
    text = (json.dumps([r.as_dict() for r in results], indent=2, ensure_ascii=False) + "\n"
            if args.format == "json" else markdown(results))
    if args.with_published and args.format == "markdown":
        text += "\n" + published_markdown(list(dict.fromkeys(r.test_set for r in results)))
    if args.output:
        atomic_write_text(args.output, text)
        print(f"wrote {args.output}")
    else:
        print(text, end="")
    return 0
