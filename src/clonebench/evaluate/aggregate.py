"""Run-level numbers: means over valid rows, corpus WER, utterance-bootstrap confidence intervals."""

from __future__ import annotations

import math

import numpy as np

SCALAR_METRICS = ("sim", "sva", "wer", "cer", "mcd", "dnsmos", "dnsmos_sig", "dnsmos_bak", "dnsmos_p808", "stoi")


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
        if metric in ("wer", "cer"):
            unit = "words" if metric == "wer" else "chars"
            valid = [r for r in rows if isinstance(r.get(metric), (int, float))]
            edits, tokens = sum(r[f"{metric}_edits"] for r in valid), sum(r[f"{metric}_ref_{unit}"] for r in valid)
            entry[f"mean_utterance_{metric}"] = entry["mean"]
            entry[f"corpus_{metric}"] = edits / tokens if tokens else None
            entry[f"corpus_{metric}_definition"] = f"sum of edits / sum of reference {unit}"
        out[metric] = entry
    return out
