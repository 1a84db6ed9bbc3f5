"""Comparing a run with a historical result set (or two tables): verify they are the same pairs scored the same way,
then report paired deltas per metric."""

from __future__ import annotations

from clonebench.core.errors import ClonebenchError
from clonebench.report.tables import ResultTable
from clonebench.stats.paired import paired_summary

PAIRED_METRICS = ("mcd", "wer", "sim")  # the conventions' order: a fresh generator per metric in this order
# compared after PAIRED_METRICS (so theirs stay as they were) when both sides have a value for every pair: the
# failure rate (per pair 0/1; its means and delta are rates, shown in percent)
OPTIONAL_PAIRED = ("fail",)
FIXES = {"backend": "evaluation.whisper.backend", "model": "evaluation.whisper.model",
         "weights_sha256": "evaluation.whisper.local_path / evaluation.whisper.model (the locked checkpoint)",
         "normalisation": "evaluation.whisper.normalisation", "threshold": "evaluation.ecapa.threshold",
         "precision": "the same vc.evaluation.device kind and evaluation.whisper.compute_type, or "
                      "--allow-mixed-precision to compare anyway"}


class IncomparableError(ClonebenchError):
    pass


def check_same_pairs(current: ResultTable, historical: ResultTable) -> dict:
    cur = {r["pair_id"]: r for r in current.rows}
    hist = {r["pair_id"]: r for r in historical.rows}
    missing, extra = sorted(set(hist) - set(cur)), sorted(set(cur) - set(hist))
    if missing or extra:
        raise IncomparableError(f"{current.label} vs {historical.label}: different pairs (missing {missing[:5]}, "
                                f"extra {extra[:5]}); compare runs of the same subset")
    problems, checked = [], {"pair_ids": len(hist), "speaker_ids": 0, "target_texts": 0, "audio_hashes": 0}
    for pair_id, h in hist.items():
        c = cur[pair_id]
        if str(c.get("speaker_id")) != str(h.get("speaker_id")):
            problems.append(f"{pair_id}: speaker {c.get('speaker_id')} vs {h.get('speaker_id')}")
        checked["speaker_ids"] += 1
        if c.get("target_text") and h.get("target_text"):
            checked["target_texts"] += 1
            if c["target_text"] != h["target_text"]:
                problems.append(f"{pair_id}: target transcript differs")
        for key in ("prompt_sha256", "target_sha256"):
            if c.get(key) and h.get(key):
                checked["audio_hashes"] += 1
                if c[key] != h[key]:
                    problems.append(f"{pair_id}: {key} {c[key][:12]} vs {h[key][:12]}")
    if problems:
        raise IncomparableError(f"{current.label} vs {historical.label}: inputs differ: " + "; ".join(problems[:10]))
    return checked


def check_protocols(current: ResultTable, historical: ResultTable, metrics: tuple[str, ...],
                    allow_mixed_precision: bool = False) -> dict:
    """Per metric, that both sides were scored by the same protocol (the historical side's recorded keys), the
    precision (evaluate/execution/precision.py) included unless ``allow_mixed_precision``; raises IncomparableError naming
    each difference and its fix."""
    checked = {}
    for metric in metrics:
        want, have = historical.protocols.get(metric), current.protocols.get(metric)
        if not want or not have:
            checked[metric] = "not recorded on both sides: not checked"
            continue
        differ = {k: (have.get(k), v) for k, v in want.items() if have.get(k) != v}
        mixed = differ.pop("precision", None) if allow_mixed_precision else None
        if "precision" in differ:
            a, b = differ["precision"]
            differ["precision"] = (f"{a} (mixed precision)", b)
        if differ:
            fixes = sorted({FIXES.get(k, k) for k in differ})
            raise IncomparableError(
                f"{metric}: {current.label} was scored differently from {historical.label}: "
                + "; ".join(f"{k} {a!r} vs {b!r}" for k, (a, b) in differ.items())
                + f". Re-score with the same protocol (fix: {', '.join(fixes)})")
        checked[metric] = "same protocol"
        if mixed:
            checked[metric] += f" but precision {mixed[0]} vs {mixed[1]} (accepted: --allow-mixed-precision)"
        elif "precision" not in want:
            checked[metric] += " (precision not recorded on the historical side)"
    return checked


def default_metrics(current: ResultTable, historical: ResultTable) -> tuple[str, ...]:
    """PAIRED_METRICS, then each of OPTIONAL_PAIRED that every row of both sides has (an old run without it: none)."""
    def has(table: ResultTable, metric: str) -> bool:
        return bool(table.rows) and all(v is not None for v in table.values(metric))
    return PAIRED_METRICS + tuple(m for m in OPTIONAL_PAIRED if has(current, m) and has(historical, m))


def compare(current: ResultTable, historical: ResultTable, metrics: tuple[str, ...] | None = None,
            allow_mixed_precision: bool = False) -> dict:
    """Paired deltas of ``metrics`` (default: ``default_metrics``) over the pairs of ``historical``."""
    if metrics is None:
        metrics = default_metrics(current, historical)
    checks = {"inputs": check_same_pairs(current, historical),
              "protocols": check_protocols(current, historical, metrics, allow_mixed_precision)}
    order = [r["pair_id"] for r in historical.rows]  # manifest order
    cur = {r["pair_id"]: r for r in current.rows}
    speakers = [str(r["speaker_id"]) for r in historical.rows]
    out = {}
    for metric in metrics:
        c_values = [ResultTable(current.label, [cur[p]]).values(metric)[0] for p in order]
        h_values = historical.values(metric)
        missing = [p for p, c, h in zip(order, c_values, h_values) if c is None or h is None]
        if missing:
            raise IncomparableError(f"{metric}: no value for {missing[:5]} on one side; a paired comparison needs "
                                    "every pair (finish or re-score the run)")
        out[metric] = paired_summary(c_values, h_values, speakers)
    return {"current": current.label, "historical": historical.label, "checks": checks, "metrics": out,
            "historical_limits": historical.notes}
