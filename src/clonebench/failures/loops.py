"""Repeated audio that survives tempo and pitch jitter: a loop is never a byte copy of its phrase.

A cloning model that loops says a phrase again, each time a little faster or slower and at another pitch. A
fixed-lag comparison (frame i against frame i + lag) loses such a repeat after a few hundred milliseconds, as
the drift grows (a 3 % tempo change is 30 ms per second). Here the clip's frames are compared all against all
(a self-similarity matrix, the standard tool for finding repeats in music and speech), and the longest warped
path of matching frames is found by local alignment (Smith-Waterman over the matrix, with the steps of dynamic
time warping restricted to (1, 1), (1, 2) and (2, 1): a repeat may run between half and twice the original's
speed). numpy has no local alignment over a similarity matrix and librosa's ``sequence.rqa`` returns one path
from a given end point, not the longest repeated stretch of a clip; hence the few lines below.

Features: MFCCs 1-19 of a 40-band log-mel spectrogram (20 ms hop; c0, the loudness, left out), mean-normalised
over the clip and unit length per frame. The cepstrum's low coefficients describe the spectral envelope (what is
said) and not the harmonics (the pitch), so a repeat at another pitch still matches.
"""

from __future__ import annotations

import numpy as np

RATE = 16_000
FRAME_HOP = 320        # 20 ms
N_MELS = 40
N_MFCC = 20            # coefficients 1..19 are used
MIN_LAG_S = 0.5        # a repeat starts at least this long after what it repeats (not one stretched sound)
MAX_LAG_S = 20.0       # and within this
MISMATCH = 2.0         # a frame pair below the similarity costs this many matched frames


def features(mono_16k: np.ndarray) -> np.ndarray:
    """Unit-length, mean-normalised MFCCs 1-19 per 20 ms frame."""
    import librosa

    mfcc = librosa.feature.mfcc(y=mono_16k.astype(np.float32), sr=RATE, n_mfcc=N_MFCC, n_fft=640,
                                hop_length=FRAME_HOP, n_mels=N_MELS, center=True)[1:].T.astype(np.float64)
    mfcc -= mfcc.mean(axis=0)
    return mfcc / np.maximum(np.linalg.norm(mfcc, axis=1, keepdims=True), 1e-9)


def longest_repeat(frames: np.ndarray, voiced: np.ndarray, similarity: float) -> int:
    """Frames of the longest stretch that recurs later (warped), both stretches inside ``voiced`` frames.

    Local alignment of the clip with itself above the diagonal, within lags MIN_LAG_S..MAX_LAG_S: a frame pair
    scores +1 when its cosine similarity is at least ``similarity`` and -MISMATCH otherwise; a path's score restarts
    at 0 where it would go negative; its length counts the frames of the earlier occurrence, up to a matching pair.
    Kept in lag coordinates (cell (i, lag) compares frame i with frame i + lag), so memory and time grow with the
    clip's length times the lag band, not with its square: steps (1, 1), (1, 2) and (2, 1) come from (i-1, lag),
    (i-1, lag-1) and (i-2, lag+1)."""
    n = len(frames)
    lo, hi = int(MIN_LAG_S * RATE / FRAME_HOP), int(MAX_LAG_S * RATE / FRAME_HOP)
    hi = min(hi, n - 1)
    if hi < lo:
        return 0
    width = hi - lo + 1
    neg = np.full(1, -np.inf)
    score_1, score_2 = np.zeros(width), np.zeros(width)     # rows i-1 and i-2, by lag
    length_1, length_2 = np.zeros(width), np.zeros(width)
    best = 0.0
    for i in range(n):
        end = min(n, i + hi + 1)
        count = max(0, end - (i + lo))
        match = np.full(width, -np.inf)
        if count:
            later = frames[i + lo:end]
            ok = (later @ frames[i] >= similarity) & voiced[i] & voiced[i + lo:end]
            match[:count] = np.where(ok, 1.0, -MISMATCH)
        came = np.stack([score_1, np.concatenate([neg, score_1[:-1]]), np.concatenate([score_2[1:], neg])])
        lens = np.stack([length_1 + 1, np.concatenate([[0.0], length_1[:-1]]) + 1,
                         np.concatenate([length_2[1:], [0.0]]) + 2])
        pick = np.argmax(came, axis=0)
        prior = came[pick, np.arange(width)]
        fresh = prior <= 0
        score = np.maximum(np.where(fresh, match, prior + match), 0.0)
        length = np.where(fresh, 1.0, lens[pick, np.arange(width)])
        length[score <= 0] = 0.0
        ends = length[match > 0]  # a path ends on a matching pair
        if ends.size:
            best = max(best, float(ends.max()))
        score_2, score_1 = score_1, score
        length_2, length_1 = length_1, length
    return int(best)


def repeated_seconds(mono_16k: np.ndarray, segments: tuple[tuple[float, float], ...], similarity: float) -> float:
    """The longest stretch of detected speech that recurs later in the clip, tempo and pitch allowed to drift."""
    if not segments:
        return 0.0
    frames = features(mono_16k)
    times = np.arange(len(frames)) * FRAME_HOP / RATE
    voiced = np.zeros(len(frames), dtype=bool)
    for start, end in segments:
        voiced |= (times >= start) & (times < end)
    return longest_repeat(frames, voiced, similarity) * FRAME_HOP / RATE
