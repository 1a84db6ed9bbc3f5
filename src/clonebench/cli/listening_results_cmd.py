"""The results of a listening test: screening, scores with 95 % CIs over raters and items, agreement.

    clonebench listening-results DIR RATINGS.json [...] [--format md|latex|csv] [--output FILE]

Refuses a file of another test, an edited or truncated one, or one with trials missing. Writes DIR/results.json
(read by `clonebench report --listening DIR`) and DIR/ratings_long.csv; prints the table. Exit 1 when no rater
passes the screening.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from clonebench.core.atomic import atomic_write_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("test_dir", type=Path, help="the folder `clonebench listening-test` wrote")
    parser.add_argument("ratings", nargs="+", type=Path, help="the raters' downloaded files")
    parser.add_argument("--format", choices=("md", "latex", "csv"), default="md")
    parser.add_argument("--output", type=Path, help="write the table here instead of standard output")


def run(args: argparse.Namespace) -> int:
    from clonebench.listening import tables
    from clonebench.listening.results import write_results

    summary = write_results(args.test_dir, args.ratings)
    text = {"md": tables.markdown, "latex": tables.latex, "csv": tables.csv_text}[args.format](summary)
    if args.output:
        atomic_write_text(args.output, text)
    else:
        print(text, end="")
    return 0 if summary["raters"]["kept"] else 1
