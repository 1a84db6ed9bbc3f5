"""The summary of a suite run, derived again from its task runs (after scoring a task again, or to print it):
writes suite_results.json, suite_summary.{md,tex,csv} and submission.json into the suite directory and prints one.

    clonebench suite SUITE_DIR [--format md|latex|csv|json] [--output FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from clonebench.core.atomic import atomic_write_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("suite_dir", type=Path, help="a suite run directory (run_vc.py --config-name suite/...)")
    parser.add_argument("--format", choices=("md", "latex", "csv", "json"), default="md")
    parser.add_argument("--output", type=Path, help="also write the printed summary here")


def run(args: argparse.Namespace) -> int:
    from clonebench.suite.outputs import results_json, write_suite_outputs
    from clonebench.suite.tables import csv_text, latex, markdown

    results = write_suite_outputs(args.suite_dir)
    render = {"md": markdown, "latex": latex, "csv": csv_text,
              "json": lambda r: json.dumps(results_json(r), indent=2, ensure_ascii=False) + "\n"}[args.format]
    text = render(results)
    if args.output:
        atomic_write_text(args.output, text)
    print(text, end="")
    return 0 if results.status == "complete" else 1
