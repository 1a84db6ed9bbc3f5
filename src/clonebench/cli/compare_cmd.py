"""Compare a finished run with a historical result set: same pairs, same inputs, same scorer protocol, then per
metric the current and historical means, the paired mean delta, the mean absolute delta and its speaker-cluster
bootstrap 95 % CI (scoring_conventions.md).

    clonebench compare RUN_DIR [--historical reproduction/historical/fish_s2_http_libritts16.json]
    clonebench compare --current A.json --historical B.json --output OUT.json   (two plain per-sample tables)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from clonebench.atomic import atomic_write_json
from clonebench.errors import ClonebenchError
from clonebench.report.compare import PAIRED_METRICS, compare
from clonebench.report.tables import load_plain

DEFAULT_HISTORICAL = Path(__file__).resolve().parents[3] / "reproduction" / "historical" / "fish_s2_http_libritts16.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", nargs="?", type=Path, help="an evaluated run directory")
    parser.add_argument("--current", type=Path, help="instead of RUN: a per-sample table (JSON/CSV) or run directory")
    parser.add_argument("--historical", type=Path, default=DEFAULT_HISTORICAL, help="default: %(default)s")
    parser.add_argument("--metrics", default=",".join(PAIRED_METRICS), help="default: %(default)s")
    parser.add_argument("--output", type=Path, help="write the comparison as JSON here")
    parser.add_argument("--allow-mixed-precision", action="store_true",
                        help="compare scores computed in different precisions (e.g. float16 on a GPU vs float32)")


def run(args: argparse.Namespace) -> int:
    source = args.current or args.run
    if source is None:
        raise ClonebenchError("give a run directory or --current TABLE")
    metrics = tuple(m.strip() for m in args.metrics.split(",") if m.strip())
    result = compare(load_plain(source), load_plain(args.historical), metrics, args.allow_mixed_precision)
    if args.output:
        atomic_write_json(args.output, result)
    print(f"{result['current']} vs {result['historical']} ({result['checks']['inputs']['pair_ids']} pairs; inputs "
          f"verified: {json.dumps(result['checks']['inputs'])})")
    print(f"{'metric':<6} {'current':>9} {'historical':>10} {'delta':>9} {'|delta|':>9} {'95% CI (speaker bootstrap)':>28}")
    for metric, m in result["metrics"].items():
        ci = f"[{m['delta_ci95'][0]:+.4f}, {m['delta_ci95'][1]:+.4f}]"
        print(f"{metric:<6} {m['current_mean']:>9.4f} {m['historical_mean']:>10.4f} {m['paired_mean_delta']:>+9.4f} "
              f"{m['mean_abs_delta']:>9.4f} {ci:>28}")
    for metric, check in result["checks"]["protocols"].items():
        if "precision" in check:
            print(f"note: {metric}: {check}")
    for note in result["historical_limits"] or []:
        print(f"note: {note}")
    return 0
