"""Whether two runs are comparable, and what differs when they are not: both complete, same input fingerprint,
same seed policy (with a seed the server honoured), same effective sampling, same scorer fingerprint for every
metric; a precision difference (float16 on a GPU vs float32) is named, and accepted as a note with
``allow_mixed_precision``. ``clonebench compare-check`` prints it; ``compare`` refuses on it."""

from __future__ import annotations


def _execution_changes(ea: dict, eb: dict) -> str:
    changed = [f"{k} {ea.get(k)!r} vs {eb.get(k)!r}" for k in sorted(set(ea) | set(eb)) if ea.get(k) != eb.get(k)]
    return "; ".join(changed) or "another scorer version, asset or package"


def scorer_differences(a, b, allow_mixed_precision: bool = False) -> tuple[list[str], list[str]]:
    """(differences, notes) of the two runs' scorers, per metric."""
    out, notes = [], []
    for metric in sorted(set(a.fingerprints) | set(b.fingerprints)):
        fa, fb = a.fingerprints.get(metric), b.fingerprints.get(metric)
        if fa == fb:
            continue
        pa, pb = a.protocols.get(metric) or {}, b.protocols.get(metric) or {}
        changed = sorted(k for k in set(pa) | set(pb) if pa.get(k) != pb.get(k))
        devices = f"{a.executions.get(metric, {}).get('device')} vs {b.executions.get(metric, {}).get('device')}"
        if fa is None or fb is None or [k for k in changed if k != "precision"]:
            what = ", ".join(f"{k} {pa.get(k)!r} vs {pb.get(k)!r}" for k in changed) or "not scored on both"
            out.append(f"{metric} scorer protocol differs: {what}")
        elif allow_mixed_precision:
            kind = f"precision {pa.get('precision')} vs {pb.get('precision')}, " if changed else ""
            notes.append(f"{metric}: scored differently ({kind}{devices}), accepted (--allow-mixed-precision)")
        elif changed:
            out.append(f"{metric} precision: {pa.get('precision')} vs {pb.get('precision')} ({devices}): mixed "
                       "precision; re-score alike, or pass --allow-mixed-precision to compare anyway")
        else:
            out.append(f"{metric} scorer fingerprint: {fa} vs {fb} (execution: "
                       f"{_execution_changes(a.executions.get(metric, {}), b.executions.get(metric, {}))})")
    return out, notes


def differences(a, b, allow_mixed_precision: bool = False, notes: list[str] | None = None) -> list[str]:
    out = []
    for table in (a, b):
        if table.status != "complete":
            out.append(f"{table.run_dir}: evaluation is {table.status}, not complete")
        if table.generation_status not in (None, "generated"):
            out.append(f"{table.run_dir}: generation is {table.generation_status}")
    if a.input_fingerprint != b.input_fingerprint:
        out.append(f"input fingerprint: {a.input_fingerprint} vs {b.input_fingerprint} (different pairs or audio)")
    for table in (a, b):
        if not table.seeded and table.seed_policy not in (None, "not_supported", "unseeded"):
            out.append(f"{table.run_dir}: {table.unseeded_why}: no seed, outputs cannot be matched seed for seed")
        elif not table.seeded:
            out.append(f"{table.run_dir}: seed policy {table.seed_policy!r}: outputs cannot be matched seed for seed")
    if (a.seed_policy, a.seed) != (b.seed_policy, b.seed):
        out.append(f"seed policy: {a.seed_policy} seed {a.seed} vs {b.seed_policy} seed {b.seed}")
    sa, sb = a.effective_sampling or {}, b.effective_sampling or {}
    if sa != sb:
        changed = ", ".join(f"{k} {sa.get(k)!r} vs {sb.get(k)!r}" for k in sorted(set(sa) | set(sb))
                            if sa.get(k) != sb.get(k))
        out.append(f"effective sampling differs: {changed}")
    found, noted = scorer_differences(a, b, allow_mixed_precision)
    if notes is not None:
        notes.extend(noted)
    return out + found
