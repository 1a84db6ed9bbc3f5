"""Is one clip a (processed) copy of another? The rule the leak check applies to hidden targets
(``external/leak.py``) and the failure scorer to a pair's prompt (``prompt_copy``).

Both clips are brought to 16 kHz mono (scipy polyphase); a copy has a normalised cross-correlation of at least
0.95 at some lag within 0.2 s (gain, resampling, added noise, a codec's delay change little of it). Two different
renditions of a sentence, even by the same voice, correlate near 0 at the sample level, so a clone cannot reach it.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import correlate, resample_poly

from clonebench.data.audio import to_mono

RATE = 16_000
MAX_LAG_S = 0.2


def at_16k(samples: np.ndarray, rate: int) -> np.ndarray:
    """The mono channel mean, as float64, resampled to 16 kHz."""
    mono = to_mono(samples).astype(np.float64)
    return mono if rate == RATE else resample_poly(mono, RATE, rate)


def peak_correlation(a: np.ndarray, b: np.ndarray, max_lag: int) -> float:
    """The largest normalised cross-correlation of ``a`` and ``b`` at lags within ``max_lag`` samples."""
    a, b = a - a.mean(), b - b.mean()
    norm = np.linalg.norm(a) * np.linalg.norm(b)
    if norm == 0:
        return 0.0
    full = correlate(a, b, mode="full", method="fft")
    zero = len(b) - 1
    window = full[max(0, zero - max_lag): zero + max_lag + 1]
    return float(np.max(np.abs(window)) / norm)


def copy_correlation(a: np.ndarray, rate_a: int, b: np.ndarray, rate_b: int) -> float:
    """``peak_correlation`` of two clips at 16 kHz, lags within 0.2 s."""
    return peak_correlation(at_16k(a, rate_a), at_16k(b, rate_b), int(MAX_LAG_S * RATE))
