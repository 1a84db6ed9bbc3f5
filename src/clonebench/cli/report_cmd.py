"""A paper table of evaluated runs: rows = runs, columns SIM↑ WER↓ MCD↓ DNSMOS↑ SVA↑ with n and 95 % CI.

    clonebench report RUN [RUN ...] --format md|latex|csv [--with-paper] [--allow-partial] [--output FILE]

Partial runs are refused unless --allow-partial, which labels them. --with-paper adds the paper's 18
published LibriTTS rows (reproduction/paper/), marked as published values.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from clonebench.atomic import atomic_write_text
from clonebench.errors import ClonebenchError
from clonebench.report.paper import csv_text, latex, markdown, paper_rows, run_rows
from clonebench.report.tables import load_run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", type=Path, help="evaluated run directories")
    parser.add_argument("--format", choices=("md", "latex", "csv"), default="md")
    parser.add_argument("--with-paper", action="store_true", help="add the paper's published LibriTTS rows")
    parser.add_argument("--allow-partial", action="store_true", help="include partial runs, labelled (partial)")
    parser.add_argument("--label", action="append", help="row label per run, in order (default: run_name)")
    parser.add_argument("--output", type=Path, help="write here instead of standard output")


def run(args: argparse.Namespace) -> int:
    tables = [load_run(path) for path in args.runs]
    partial = [t for t in tables if t.status != "complete"]
    if partial and not args.allow_partial:
        raise ClonebenchError(f"partial run(s) {[str(t.run_dir) for t in partial]}: finish them, or pass "
                              "--allow-partial to include them labelled (partial)")
    for table, label in zip(tables, args.label or []):
        table.label = label
    rows = run_rows(tables) + (paper_rows() if args.with_paper else [])
    text = {"md": markdown, "latex": latex, "csv": csv_text}[args.format](rows)
    if args.output:
        atomic_write_text(args.output, text)
    else:
        print(text, end="")
    return 0
