"""N >= 2 systems on the same pairs: per metric each system's mean and CI, paired differences to a baseline (or
between all pairs of systems) with speaker-cluster bootstrap CIs and p-values, Holm-Bonferroni adjusted over the
comparisons of that metric, paired Cohen's dz, the pairs each system wins, and the seed variance of systems
that were generated several times (``stats.cluster``, ``stats.seed_variance``).

Runs of other pairs, or scored with another scorer protocol (fingerprint: scorer version, code, packages, assets,
device and threads), are refused, naming what differs; ``allow_incompatible`` shows each system's means without
any comparison or ranking. A system's per-pair value is the mean over its replicate runs.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from clonebench.core.errors import ClonebenchError
from clonebench.report.systems import (
    System,
    common_metrics,
    pair_differences,
    pair_order,
    partial_runs,
    protocol_differences,
    replicate_notes,
    unseeded_notes,
)
from clonebench.stats import seed_variance
from clonebench.stats.cluster import DRAWS, SEED, cluster_bootstrap, cohen_dz, wins
from clonebench.stats.holm import holm

# "fail": the failure rate (per pair 1.0 when a failure flag is raised, else 0.0; failures/), compared paired like
# every other metric, when every run scored it
# seed_*: Seed-TTS-eval's own protocol (docs/seed-tts-eval.md), compared only with the same metric of other runs:
# a metric is compared when every run has it, so its numbers never meet RVCBench's sim/wer
CANDIDATES = ("sim", "sva", "wer", "mcd", "dnsmos", "stoi", "mos", "emotion_match", "fail", "seed_wer_en",
              "seed_wer_zh", "seed_sim")
HIGHER_IS_BETTER = {"sim": True, "sva": True, "wer": False, "mcd": False, "dnsmos": True, "stoi": True, "mos": True,
                    "emotion_match": True, "fail": False, "seed_wer_en": False, "seed_wer_zh": False, "seed_sim": True}
ALPHA = 0.05
FEW_SPEAKERS = 10  # below this the cluster bootstrap is conservative and its intervals unstable (simulated)


class IncomparableSystems(ClonebenchError):
    pass


def _pairs_of(systems: list[System], baseline: str | None, all_pairs: bool) -> list[tuple[int, int]]:
    labels = [s.label for s in systems]
    if all_pairs:
        return list(combinations(range(len(systems)), 2))
    if baseline is not None and baseline not in labels:
        raise ClonebenchError(f"--baseline {baseline!r} is none of the systems {labels}")
    base = labels.index(baseline) if baseline is not None else 0
    return [(base, k) for k in range(len(systems)) if k != base]


def _verdict(delta: float, p_holm: float | None, higher: bool, a: str, b: str) -> str:
    if p_holm is None:
        return "not testable (fewer than two speakers)"
    if p_holm >= ALPHA:
        return f"no significant difference (Holm-adjusted p >= {ALPHA})"
    better = b if (delta > 0) == higher else a
    return f"{better} better"


def _system_entry(system: System, values: np.ndarray, speakers: np.ndarray, draws: int, seed: int) -> tuple[dict, np.ndarray]:
    per_pair = np.where(np.isfinite(values).all(axis=0), values.mean(axis=0), np.nan)
    keep = np.isfinite(per_pair)
    entry = {"system": system.label, "runs": len(system.runs), "n": int(keep.sum()), "n_pairs": len(per_pair),
             "mean": None, "ci": None, "seed": seed_variance.components(values)}
    if keep.any():
        boot = cluster_bootstrap(per_pair[keep], list(speakers[keep]), draws=draws, seed=seed)
        entry.update(mean=boot["mean"], ci=boot["ci_percentile"], speakers=boot["clusters"])
    return entry, per_pair


def _comparison(a: int, b: int, entries: list[dict], per_pair: list[np.ndarray], speakers: np.ndarray,
                higher: bool, pooled: float | None, draws: int, seed: int) -> dict:
    keep = np.isfinite(per_pair[a]) & np.isfinite(per_pair[b])
    out = {"a": entries[a]["system"], "b": entries[b]["system"], "n": int(keep.sum())}
    if not keep.any():
        return {**out, "delta": None, "ci": None, "p_value": None, "dz": None, "wins": None, "reseeding": None}
    va, vb = per_pair[a][keep], per_pair[b][keep]
    boot = cluster_bootstrap(vb - va, list(speakers[keep]), draws=draws, seed=seed)
    return {**out, "speakers": boot["clusters"], "delta": boot["mean"], "se": boot["se"], "ci": boot["ci"],
            "p_value": boot["p_value"], "dz": cohen_dz(vb - va), "wins": wins(va, vb, higher),
            "reseeding": seed_variance.versus_reseeding(boot["mean"], int(keep.sum()),
                                                        (entries[a]["seed"], entries[a]["runs"]),
                                                        (entries[b]["seed"], entries[b]["runs"]), pooled)}


def compare_systems(systems: list[System], metrics: list[str] | None = None, baseline: str | None = None,
                    all_pairs: bool = False, allow_incompatible: bool = False, allow_partial: bool = False,
                    draws: int = DRAWS, seed: int = SEED, allow_mixed_precision: bool = False) -> dict:
    if len(systems) < 2:
        raise ClonebenchError("compare needs at least two systems (or one system with --historical)")
    chosen = list(metrics) if metrics else common_metrics(systems, CANDIDATES)
    unknown = [m for m in chosen if m not in HIGHER_IS_BETTER]
    missing = [m for m in chosen if m not in common_metrics(systems, tuple(chosen))]
    if unknown or missing or not chosen:
        raise ClonebenchError(f"metrics {unknown + missing or chosen}: unknown, or not scored by every run; "
                              f"comparable metrics here: {common_metrics(systems, CANDIDATES)}")
    partial = partial_runs(systems)
    if partial and not allow_partial:
        raise IncomparableSystems("partial run(s): " + "; ".join(partial) + " (finish them, or pass --allow-partial "
                                  "to compare on the pairs every system scored)")
    precision_notes: list[str] = []
    problems = pair_differences(systems) + protocol_differences(systems, chosen, allow_mixed_precision,
                                                                precision_notes)
    if problems and not allow_incompatible:
        raise IncomparableSystems("the systems cannot be compared:\n  " + "\n  ".join(problems) + "\nscore them on "
                                  "the same pairs with the same scorer settings and device, or pass "
                                  "--allow-incompatible to see each system's means without any ranking")
    ranked = not problems
    order, speakers, _ = pair_order(systems)
    speakers = np.asarray(speakers, dtype=object)
    pairs = _pairs_of(systems, baseline, all_pairs) if ranked else []
    result = {"schema": "clonebench.comparison/v1", "ranked": ranked, "problems": problems, "partial": partial,
              "precision_notes": precision_notes,
              "systems": [{"system": s.label, "runs": [str(t.run_dir) for t in s.runs]} for s in systems],
              "baseline": None if all_pairs or not ranked else systems[pairs[0][0]].label if pairs else None,
              "mode": "all pairs" if all_pairs else "against the baseline", "alpha": ALPHA, "n_pairs": len(order),
              "method": (f"speaker-cluster bootstrap, {draws} draws, seed {seed}: percentile CIs of each system's "
                         "mean; studentized CIs and two-sided p-values of the paired differences, Holm-Bonferroni "
                         "adjusted over the comparisons of each metric; dz = mean(d)/sd(d)"),
              "metrics": {}}
    for metric in chosen:
        higher = HIGHER_IS_BETTER[metric]
        built = [_system_entry(s, s.values(metric, order), speakers, draws, seed) for s in systems]
        entries, per_pair = [e for e, _ in built], [v for _, v in built]
        pooled = seed_variance.pooled_seed_var({e["system"]: e["seed"] for e in entries})
        comparisons = [_comparison(a, b, entries, per_pair, speakers, higher, pooled, draws, seed) for a, b in pairs]
        for comparison, adjusted in zip(comparisons, holm([c["p_value"] for c in comparisons])):
            comparison["p_holm"] = adjusted
            comparison["verdict"] = ("no pairs in common" if comparison["delta"] is None else
                                     _verdict(comparison["delta"], adjusted, higher, comparison["a"], comparison["b"]))
        means = [e["mean"] for e in entries if e["mean"] is not None]
        best = (max(means) if higher else min(means)) if ranked and len(means) >= 2 else None
        result["metrics"][metric] = {"higher_is_better": higher, "systems": entries, "comparisons": comparisons,
                                     "best": best, "pooled_seed_var": pooled}
    speakers_n = len(set(speakers))
    result["warnings"] = replicate_notes(systems)
    if speakers_n < FEW_SPEAKERS:
        result["warnings"].append(f"only {speakers_n} speakers: a speaker-cluster bootstrap is coarse with fewer than "
                                  f"{FEW_SPEAKERS} (intervals wide or unbounded, small p-values unreachable); use "
                                  "more speakers for claims")
    result["warnings"] += unseeded_notes(systems)
    return result
