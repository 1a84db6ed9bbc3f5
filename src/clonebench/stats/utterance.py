"""Run-level numbers: means over valid rows, corpus WER, utterance-bootstrap confidence intervals; and the same
aggregates as rvcbench 2.2.1 reports them (``upstream``).

clonebench's own CI (``ci``) draws from ``numpy.random.default_rng(evaluation.bootstrap_seed)`` afresh for each
metric, so a metric's interval does not depend on which other metrics a run requests. Upstream
(``evaluation/pipeline.py`` ``_export`` with ``evaluation/bootstrap.py``, bootstrap ``seed: null`` as in its suites
and its LibriTTS configs) re-seeds NumPy's global RNG with the evaluation seed (``configure_seeds(seed)``) after
scoring and then draws, metric after metric in the requested order, ``numpy.random.choice(values, n)`` 1000 times
per metric with more than one value; ``avg_<m>`` is ``sum(values) / len(values)``. Both are written to
``metrics.json``, each named.
"""

from __future__ import annotations

import math

import numpy as np

SCALAR_METRICS = ("sim", "sva", "wer", "cer", "mcd", "dnsmos", "dnsmos_sig", "dnsmos_bak", "dnsmos_p808", "stoi")
UPSTREAM_NAMES = {"mos": "speechmos", "emotion_match": "emotion"}  # clonebench metric -> rvcbench metric
# metrics rvcbench does not have: no upstream aggregate (and no draw from upstream's RNG stream, so the other
# metrics' upstream intervals stay upstream's whatever else a run asks for)
CLONEBENCH_ONLY = ("fail",)
UPSTREAM_METHOD = ("rvcbench 2.2.1 pipeline._export: avg = sum(values) / len(values); CI = bootstrap.py with seed "
                   "null: numpy's global RNG seeded with evaluation.seed {seed}, numpy.random.choice(values, n) "
                   "{resamples} times per metric, metrics in the order of evaluation.metrics, percentile "
                   "{confidence:.0%} interval")


SEED_MODULUS = 2**32 - 1  # numpy's RandomState seed range as rvcbench's configure_seeds reduces seeds into it


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


def upstream_aggregates(columns: list[tuple[str, list[float]]], resamples: int, confidence: float,
                        seed: int) -> dict[str, dict]:
    """``avg_<m>`` and ``avg_<m>_ci`` as rvcbench 2.2.1 computes them, for ``columns`` in their requested order."""
    rng = np.random.RandomState(seed % SEED_MODULUS)  # what configure_seeds leaves numpy.random.choice drawing from
    out = {}
    for metric, values in columns:
        entry = {"name": f"avg_{UPSTREAM_NAMES.get(metric, metric)}", "pairs": len(values),
                 "avg": sum(values) / len(values) if values else None, "ci": None}
        data = np.asarray(values, dtype=np.float64)
        data = data[np.isfinite(data)]
        if data.size > 1:
            means = np.empty(resamples, dtype=np.float64)
            for i in range(resamples):  # one draw per resample, as upstream (the RNG stream must match)
                means[i] = float(rng.choice(data, size=data.size, replace=True).mean())
            tail = 0.5 * (1.0 - confidence)
            entry["ci"] = {"lower": float(np.quantile(means, tail)), "upper": float(np.quantile(means, 1.0 - tail)),
                           "confidence_level": confidence, "num_resamples": resamples,
                           "std": float(means.std(ddof=1)) if resamples > 1 else 0.0, "avg": float(data.mean())}
        out[metric] = entry
    return out


def summarise(rows: list[dict], requested_metrics: list[str], n_requested: int, resamples: int,
              confidence: float, seed: int, upstream_seed: int) -> dict:
    out = {}
    columns = []
    for metric in requested_metrics:
        values = [r[metric] for r in rows if isinstance(r.get(metric), (int, float)) and math.isfinite(r[metric])]
        columns.append((metric, values))
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
    method = UPSTREAM_METHOD.format(seed=upstream_seed, resamples=resamples, confidence=confidence)
    columns = [(m, v) for m, v in columns if m not in CLONEBENCH_ONLY]
    for metric, upstream in upstream_aggregates(columns, resamples, confidence, upstream_seed).items():
        out[metric]["upstream"] = {**upstream, "method": method}
    return out
