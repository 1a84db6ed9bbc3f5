"""Coarse voice features of a recording: median F0 and spectral centroid.

Used where bytes cannot be compared: the reference-sensitivity gate of servers that take no seed (their
outputs differ on every request), and the stand-in server's voice choice.
"""

from __future__ import annotations

import math

import numpy as np


def median_f0(samples: np.ndarray, rate: int, fmin: float = 60.0, fmax: float = 400.0) -> float | None:
    """Median F0 of voiced 40 ms frames by normalised autocorrelation; None if nothing is voiced."""
    frame, hop = int(0.04 * rate), int(0.02 * rate)
    if len(samples) < frame:
        return None
    lo, hi = int(rate / fmax), int(rate / fmin)
    starts = range(0, len(samples) - frame, hop)
    energies = np.array([np.sqrt(np.mean(samples[i:i + frame] ** 2)) for i in starts])
    threshold = 0.3 * np.percentile(energies, 90) if len(energies) else 0.0
    values = []
    for index, start in enumerate(starts):
        if energies[index] < threshold or energies[index] == 0:
            continue
        chunk = samples[start:start + frame] - samples[start:start + frame].mean()
        corr = np.correlate(chunk, chunk, mode="full")[frame - 1:]
        if corr[0] <= 0 or hi >= len(corr):
            continue
        lag = lo + int(np.argmax(corr[lo:hi]))
        if corr[lag] / corr[0] > 0.5:
            values.append(rate / lag)
    return float(np.median(values)) if values else None


def spectral_centroid(samples: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    freqs = np.fft.rfftfreq(len(samples), 1.0 / rate)
    total = spectrum.sum()
    return float((spectrum * freqs).sum() / total) if total > 0 else 0.0


def voice_distance(a: tuple[float | None, float], b: tuple[float | None, float]) -> float:
    """|log F0 ratio| + |log centroid ratio| between two (median F0, centroid) profiles."""
    f0 = abs(math.log(a[0] / b[0])) if a[0] and b[0] else 0.0
    centroid = abs(math.log(max(a[1], 1.0) / max(b[1], 1.0)))
    return f0 + centroid


def profile(samples: np.ndarray, rate: int) -> tuple[float | None, float]:
    return median_f0(samples, rate), spectral_centroid(samples, rate)
