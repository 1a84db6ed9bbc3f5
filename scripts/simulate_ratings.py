#!/usr/bin/env python
"""Write SIMULATED ratings files for a listening test, so that ``clonebench listening-results`` can be tried before
(or without) real raters. The raters are the test suite's scripted raters (tests/listening_sim.py): each answer is
the system's true score plus a rater bias, an item effect and noise, rounded onto the test's scale; the files are
sealed like the page's, their ``user_agent`` is "simulated" and their rater ids start with "simulated-". They are
not people's judgements: never report them as a listening test's results.

    python scripts/simulate_ratings.py TEST_DIR [--raters 3] [--seed 1] [--truth SYSTEM=SCORE ...]

``--truth`` sets a system's true mean on the test's scale (``S1=3.5``; the systems are the blinded names the test's
key gives, and ``natural`` the natural recordings); by default every system sits at the middle of the scale and the
natural recordings at its top. The files go to TEST_DIR/ratings/simulated-N.json; existing files are left alone.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO)]

KINDS = ("mos", "smos", "cmos", "mushra")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("test_dir", type=Path, help="the folder `clonebench listening-test --output` wrote")
    parser.add_argument("--raters", type=int, default=3, help="how many simulated raters (default 3)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the simulation (default 1)")
    parser.add_argument("--truth", nargs="*", default=[], metavar="SYSTEM=SCORE", help="a system's true mean")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    from clonebench.core.atomic import atomic_write_text
    from clonebench.core.errors import ClonebenchError
    from clonebench.listening.ratings import load_key
    from tests.listening_sim import Population, scale_range

    try:
        key = load_key(args.test_dir)
    except ClonebenchError as exc:
        print(f"simulate_ratings: error: {exc}", file=sys.stderr)
        return 2
    if key["kind"] not in KINDS or args.raters < 1:
        print(f"simulate_ratings: error: simulates {', '.join(KINDS)} tests with at least one rater "
              f"(this one: {key['kind']}, --raters {args.raters})", file=sys.stderr)
        return 2
    lo, hi = scale_range(key["kind"])
    systems = sorted({clip["system"] for clip in key["clips"].values() if clip["system"]})  # not the checks
    truth = {s: (0.0 if key["kind"] == "cmos" else (float(hi) if s == "natural" else (lo + hi) / 2)) for s in systems}
    for item in args.truth:
        name, _, value = item.partition("=")
        if name not in truth:
            print(f"simulate_ratings: error: --truth {item}: no system {name!r} in this test ({', '.join(systems)})",
                  file=sys.stderr)
            return 2
        truth[name] = float(value)
    population = Population(key, truth, args.seed)
    folder = args.test_dir / "ratings"
    folder.mkdir(exist_ok=True)
    written = []
    for n in range(1, args.raters + 1):
        path = folder / f"simulated-{n}.json"
        if path.exists():
            print(f"simulate_ratings: error: {path} exists; remove it or give another test", file=sys.stderr)
            return 2
        atomic_write_text(path, json.dumps(population.rater(f"simulated-{n}"), indent=1) + "\n")
        written.append(path)
    print(f"SIMULATED ratings (scripted raters, not people) for listening test {key['test_id']} ({key['kind']}), "
          f"true means {truth}: " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
