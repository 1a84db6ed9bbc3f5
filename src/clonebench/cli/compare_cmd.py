"""Compare systems scored on the same pairs, or one run with a historical result set.

N >= 2 systems (runs, ``clonebench score`` outputs, seed sweeps; ``NAME=PATH`` names them, and arguments with
the same NAME are seed replicates of one system): per metric each system's mean and 95 % CI, paired differences
to ``--baseline`` (default: the first system) or between ``--all-pairs``, with speaker-cluster bootstrap CIs and
p-values Holm-Bonferroni adjusted over the comparisons of each metric, paired Cohen's dz, the pairs each system
wins, and, for systems generated several times, the between-seed against the between-pair variance and whether
a difference exceeds what re-seeding alone produces. Runs of other pairs or scorer protocols are refused, naming
what differs (``--allow-incompatible``: each system's means, no ranking).

    clonebench compare A B [C ...] [--baseline A | --all-pairs] [--metrics sim,wer] [--format md|latex|csv|json|html]
                       [--output DIR] [--allow-incompatible] [--allow-partial]

One run against a historical result set: same pairs, same inputs, same scorer protocol, then per metric the
current and historical means, the paired mean delta, the mean absolute delta and its speaker-cluster bootstrap
95 % CI (the scoring conventions, docs/statistics.md):

    clonebench compare RUN_DIR [--historical reproduction/historical/fish_s2_http_libritts16.json] [--output OUT.json]
    clonebench compare --current A.json --historical B.json --output OUT.json   (two plain per-sample tables)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from clonebench.core.atomic import atomic_write_json
from clonebench.core.errors import ClonebenchError
from clonebench.core.paths import REPO_DIR, REPRODUCTION_DIR
from clonebench.report.compare import OPTIONAL_PAIRED, PAIRED_METRICS, compare
from clonebench.report.format import metric_label, metric_number
from clonebench.report.tables import load_plain

DEFAULT_HISTORICAL = REPRODUCTION_DIR / "historical" / "fish_s2_http_libritts16.json"
FORMATS = ("md", "latex", "csv", "json", "html")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="*", help="[NAME=]PATH of each system (two or more); or one evaluated run "
                                                "to compare with --historical")
    parser.add_argument("--current", type=Path, help="instead of RUN: a per-sample table (JSON/CSV) or run directory")
    parser.add_argument("--historical", type=Path, help="historical result set (default: the checkout's "
                        f"{DEFAULT_HISTORICAL.relative_to(REPO_DIR).as_posix()})")
    parser.add_argument("--metrics", help=f"comma-separated (default: every metric all systems have; with one run: "
                                          f"{','.join(PAIRED_METRICS)}, then {','.join(OPTIONAL_PAIRED)} when both "
                                          "sides have it)")
    parser.add_argument("--output", type=Path, help="systems: a folder for comparison.{md,tex,csv,json,html}; "
                                                    "historical: the comparison as a JSON file")
    group = parser.add_argument_group("systems")
    group.add_argument("--baseline", help="the system every other one is compared with (default: the first)")
    group.add_argument("--all-pairs", action="store_true", help="compare every pair of systems instead")
    group.add_argument("--format", choices=FORMATS, default="md", help="what to print (default %(default)s)")
    group.add_argument("--allow-incompatible", action="store_true",
                       help="show each system's means although pairs or scorer protocols differ; no ranking")
    group.add_argument("--allow-partial", action="store_true",
                       help="include partial runs, comparing on the pairs each comparison has in common")
    parser.add_argument("--allow-mixed-precision", action="store_true",
                        help="compare scores computed in different precisions (e.g. float16 on a GPU vs float32)")


def run(args: argparse.Namespace) -> int:
    if args.current is None and len(args.runs) >= 2:
        return _systems(args)
    if args.baseline or args.all_pairs or args.allow_incompatible or args.allow_partial or args.format != "md":
        raise ClonebenchError("--baseline, --all-pairs, --format, --allow-incompatible and --allow-partial compare "
                              "two or more systems: give at least two runs")
    return _historical(args)


def _systems(args: argparse.Namespace) -> int:
    from clonebench.report.compare_render import render, write_formats
    from clonebench.report.multi_compare import compare_systems
    from clonebench.report.systems import load_systems

    if args.historical:
        raise ClonebenchError("--historical compares one run; with several systems, give the historical run as one "
                              "of them")
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    result = compare_systems(load_systems(args.runs), metrics, baseline=args.baseline, all_pairs=args.all_pairs,
                             allow_incompatible=args.allow_incompatible, allow_partial=args.allow_partial,
                             allow_mixed_precision=args.allow_mixed_precision)
    text = render(result, args.format)  # the very text --output writes into comparison.<format>
    print(text, end="" if text.endswith("\n") else "\n")
    if args.output:
        written = write_formats(result, args.output, FORMATS)
        print(f"wrote {', '.join(str(p) for p in written)}")
    return 0


def _historical(args: argparse.Namespace) -> int:
    source = args.current or (args.runs[0] if args.runs else None)
    if source is None:
        raise ClonebenchError("give two or more systems, a run directory, or --current TABLE")
    metrics = tuple(m.strip() for m in args.metrics.split(",") if m.strip()) if args.metrics else None
    result = compare(load_plain(source), load_plain(args.historical or DEFAULT_HISTORICAL), metrics,
                     args.allow_mixed_precision)
    if args.output:
        atomic_write_json(args.output, result)
    print(f"{result['current']} vs {result['historical']} ({result['checks']['inputs']['pair_ids']} pairs; inputs "
          f"verified: {json.dumps(result['checks']['inputs'])})")
    print(f"{'metric':<6} {'current':>9} {'historical':>10} {'delta':>9} {'|delta|':>9} {'95% CI (speaker bootstrap)':>28}")
    for metric, m in result["metrics"].items():  # a rate (fail) in percent, its deltas in percentage points
        means = [metric_number(metric, m[k], 4) for k in ("current_mean", "historical_mean", "mean_abs_delta")]
        deltas = [metric_number(metric, v, 4, sign=True) for v in (m["paired_mean_delta"], *m["delta_ci95"])]
        ci = f"[{deltas[1]}, {deltas[2]}]"
        print(f"{metric_label(metric):<6} {means[0]:>9} {means[1]:>10} {deltas[0]:>9} {means[2]:>9} {ci:>28}")
    for metric, check in result["checks"]["protocols"].items():
        if "precision" in check:
            print(f"note: {metric}: {check}")
    for note in result["historical_limits"] or []:
        print(f"note: {note}")
    return 0
