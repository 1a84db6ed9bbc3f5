"""Re-send a run's first requests and report which outputs are byte-identical to the saved audio.

The requests are rebuilt from the run's own config and inputs (their bytes must match the journaled request
sha256) and sent to the run's endpoint (or --endpoint). A cold first request to a fresh Fish server is known
to differ from warm ones, so each can be sent --repeats times. Nothing is written into the run. A run without
a seed the server honoured (s2.cpp, an unseeded run, or seed_honoured false from the determinism probe) is
reported as unseeded: its outputs are not expected to be byte-identical.

    clonebench repeat RUN [--count 3] [--repeats 2] [--endpoint URL] [--output FILE]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from clonebench.core.atomic import atomic_write_json
from clonebench.runs.repeat import repeat_run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--count", type=int, default=3, help="first K generated samples (default %(default)s)")
    parser.add_argument("--repeats", type=int, default=1, help="sends per sample (default %(default)s)")
    parser.add_argument("--endpoint", help="override the run's adversary.endpoint_url")
    parser.add_argument("--output", type=Path, help="write the report as JSON here")


def run(args: argparse.Namespace) -> int:
    summary = repeat_run(args.run_dir, args.count, args.repeats, args.endpoint)
    report, identical, seeded = summary["results"], summary["byte_identical"], summary["seeded"]
    if args.output:
        atomic_write_json(args.output, summary)
    for r in report:
        flags = "".join("=" if same else "x" for same in r["identical_to_original"])
        print(f"{r['pair_id']:<28} request {'same' if r['request_identical'] else 'DIFFERENT'}  outputs vs saved: {flags}")
    print(f"{identical}/{len(report)} samples byte-identical on every repeat")
    if not seeded:
        print(f"no seed: {summary['unseeded_why']}, so outputs are not expected to be byte-identical")
    return 0
