"""Run-level numbers: means over valid rows, corpus WER, utterance-bootstrap confidence intervals."""

from __future__ import annotations

import math

import numpy as np

SCALAR_METRICS = ("sim", "sva", "wer", "mcd", "dnsmos", "dnsmos_sig", "dnsmos_bak", "dnsmos_p808", "stoi")


def bootstrap_ci(values: list[float], resamples: int, confidence: float, seed: int) -> list[float] | None:
    """Percentile CI of the mean over utterances resampled with replacement."""
    if len(values) < 2:
        return None
    data = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    draws = data[rng.integers(len(data), size=(resamples, len(data)))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(draws, [tail, 1.0 - tail])
    return [float(low), float(high)]


def summarise(rows: list[dict], requested_metrics: list[str], n_requested: int, resamples: int,
              confidence: float, seed: int) -> dict:
    out = {}
    for metric in requested_metrics:
        values = [r[metric] for r in rows if isinstance(r.get(metric), (int, float)) and math.isfinite(r[metric])]
        entry = {"mean": float(np.mean(values)) if values else None, "n_valid": len(values),
                 "n_requested": n_requested,
                 "ci": bootstrap_ci(values, resamples, confidence, seed),
                 "ci_method": f"utterance bootstrap, {resamples} resamples, {confidence:.0%}, seed {seed}"}
        if metric == "wer":
            valid = [r for r in rows if isinstance(r.get("wer"), (int, float))]
            edits, words = sum(r["wer_edits"] for r in valid), sum(r["wer_ref_words"] for r in valid)
            entry["mean_utterance_wer"] = entry["mean"]
            entry["corpus_wer"] = edits / words if words else None
            entry["corpus_wer_definition"] = "sum of edits / sum of reference words"
        out[metric] = entry
    return out
