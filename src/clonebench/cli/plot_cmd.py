"""Per-speaker SIM and per-utterance WER distributions of evaluated runs, as PNG files (matplotlib).

    clonebench plot RUN [RUN ...] [--output DIR]    (default: the first run's folder)
"""

from __future__ import annotations

import argparse
from pathlib import Path

from clonebench.report.plots import write_plots
from clonebench.report.tables import load_run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--output", type=Path, help="folder for sim_per_speaker.png and wer_per_utterance.png")


def run(args: argparse.Namespace) -> int:
    tables = [load_run(p) for p in args.runs]
    written = write_plots(tables, args.output or tables[0].run_dir)
    print("wrote " + (" and ".join(str(p) for p in written) if written else "nothing (no SIM or WER values)"))
    return 0
