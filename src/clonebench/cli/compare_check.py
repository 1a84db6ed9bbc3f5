"""Exit 1 unless two runs are comparable: both complete, same input fingerprint, same seed policy (with a seed
the server honoured), same effective sampling, same scorer fingerprint for every metric. Prints what differs."""

from __future__ import annotations

import argparse
from pathlib import Path

from clonebench.report.tables import load_run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)


def differences(a, b) -> list[str]:
    out = []
    for table in (a, b):
        if table.status != "complete":
            out.append(f"{table.run_dir}: evaluation is {table.status}, not complete")
        if table.generation_status not in (None, "generated"):
            out.append(f"{table.run_dir}: generation is {table.generation_status}")
    if a.input_fingerprint != b.input_fingerprint:
        out.append(f"input fingerprint: {a.input_fingerprint} vs {b.input_fingerprint} (different pairs or audio)")
    for table in (a, b):
        if table.seed_honoured is False and table.seed_policy not in (None, "not_supported", "unseeded"):
            out.append(f"{table.run_dir}: the server did not honour the seed (determinism probe): no seed, outputs "
                       "cannot be matched seed for seed")
        elif not table.seeded:
            out.append(f"{table.run_dir}: seed policy {table.seed_policy!r}: outputs cannot be matched seed for seed")
    if (a.seed_policy, a.seed) != (b.seed_policy, b.seed):
        out.append(f"seed policy: {a.seed_policy} seed {a.seed} vs {b.seed_policy} seed {b.seed}")
    sa, sb = a.effective_sampling or {}, b.effective_sampling or {}
    if sa != sb:
        changed = ", ".join(f"{k} {sa.get(k)!r} vs {sb.get(k)!r}" for k in sorted(set(sa) | set(sb))
                            if sa.get(k) != sb.get(k))
        out.append(f"effective sampling differs: {changed}")
    for metric in sorted(set(a.fingerprints) | set(b.fingerprints)):
        fa, fb = a.fingerprints.get(metric), b.fingerprints.get(metric)
        if fa != fb:
            out.append(f"{metric} scorer fingerprint: {fa} vs {fb} (another scorer version, asset, device, threads "
                       "or batch size)")
    return out


def run(args: argparse.Namespace) -> int:
    a, b = load_run(args.run_a), load_run(args.run_b)
    found = differences(a, b)
    for line in found:
        print(f"differs: {line}")
    if not found:
        print(f"comparable: same inputs ({a.input_fingerprint[:16]}...), seed policy {a.seed_policy} seed {a.seed}, "
              f"scorers {sorted(a.fingerprints)}")
    return 1 if found else 0
