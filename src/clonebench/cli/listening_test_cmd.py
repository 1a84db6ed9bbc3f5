"""A human listening test from runs: a static page to send to raters, and a private key.

    clonebench listening-test RUN [RUN ...] --kind mos|smos|cmos|mushra|arena --items N --output DIR
                              [--seed S] [--label NAME ...] [--title TEXT] [--checks K] [--pairs-per-item M]

Each run is a system (its label: --label, else its run_name). The natural recordings are rated beside the runs
(MOS, SMOS), are the hidden reference (MUSHRA) or, with one run, the CMOS baseline. N pairs that every run
generated are sampled across speakers (seeded by --seed). DIR/site/ is what raters get (open index.html, or put
the folder on any static host); DIR/key.json, which says which opaque clip id is which system, stays with you;
the raters' downloaded files go into DIR/ratings/. Then: clonebench listening-results DIR DIR/ratings/*.json
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from clonebench.listening.design import KINDS

    parser.add_argument("runs", nargs="+", type=Path, help="generation or evaluated run directories (the systems)")
    parser.add_argument("--kind", required=True, choices=KINDS)
    parser.add_argument("--items", required=True, type=int, help="pairs to sample (every rater rates all of them)")
    parser.add_argument("--output", required=True, type=Path, help="a new folder for the test")
    parser.add_argument("--seed", type=int, default=42, help="seed of the sampling and of the design (default 42)")
    parser.add_argument("--label", action="append", help="system name per run, in order (default: run_name)")
    parser.add_argument("--title", help="the page's title (default: by kind)")
    parser.add_argument("--checks", type=int, default=2,
                        help="attention checks of each type: degraded or other-speaker clips, repeated trials "
                             "(default 2; MUSHRA screens on its hidden reference instead)")
    parser.add_argument("--pairs-per-item", type=int, default=None,
                        help="arena: system pairs compared on each item, dealt so every pair is used equally often "
                             "(default: every pair on every item)")


def run(args: argparse.Namespace) -> int:
    from clonebench.listening.build import build_test

    key = build_test(args.runs, args.kind, args.items, args.output, seed=args.seed, title=args.title,
                     labels=args.label, checks=args.checks, pairs_per_item=args.pairs_per_item)
    test = [t for t in key["trials"] if t["phase"] == "test"]
    checks = sum(t["type"] != "rating" for t in test)
    systems = ", ".join(f"{s['code']} = {s['label']}" for s in key["systems"])
    print(f"listening test {key['test_id']} ({args.kind}): {len(key['sampling']['items'])} items, {len(test)} trials "
          f"({checks} attention checks), systems {systems}; loudness {key['audio']['target_lufs']} LUFS")
    print(f"raters get: {args.output / 'site'} (open index.html, or serve the folder)")
    print(f"keep private: {args.output / 'key.json'}; put ratings in {args.output / 'ratings'}/")
    return 0
