"""Exit 1 unless two runs are comparable: both complete, same input fingerprint, same seed policy (with a seed
the server honoured), same effective sampling, same scorer fingerprint for every metric. Prints what differs,
naming a precision difference (float16 on a GPU vs float32). With --allow-mixed-precision, scorers whose
protocols agree but for their precision (and so differ in device or execution) are accepted, said as a note."""

from __future__ import annotations

import argparse
from pathlib import Path

from clonebench.report.compatibility import differences
from clonebench.report.tables import load_run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    parser.add_argument("--allow-mixed-precision", action="store_true",
                        help="accept scorers that differ only in precision and execution (device, GPU, threads)")


def run(args: argparse.Namespace) -> int:
    a, b = load_run(args.run_a), load_run(args.run_b)
    notes: list[str] = []
    found = differences(a, b, args.allow_mixed_precision, notes)
    for line in found:
        print(f"differs: {line}")
    for line in notes:
        print(f"note: {line}")
    if not found:
        print(f"comparable: same inputs ({a.input_fingerprint[:16]}...), seed policy {a.seed_policy} seed {a.seed}, "
              f"scorers {sorted(a.fingerprints)}")
    return 1 if found else 0
