"""The audio a listening test presents: every clip mono (channel mean), resampled to one rate, loudness-aligned,
written as 16-bit PCM WAV with nothing but its ``fmt`` and ``data`` chunks.

- Rate: every clip at 48 kHz (``scipy.signal.resample_poly``), so a clip's sample rate cannot tell a system
  apart (generated audio is often 44.1 kHz, LibriTTS recordings 24 kHz).
- Loudness: ITU-R BS.1770-4 integrated loudness (pyloudnorm's K-weighted, gated meter; a clip shorter than the
  meter's 0.4 s block is measured as one block), then a per-clip gain to one target loudness for every clip of
  every system, the natural recordings and the anchors alike (ITU-R BS.1534-3 asks for loudness-aligned stimuli;
  P.800 for one presentation level). The target is -23 LUFS (EBU R128), lowered for all clips together when
  a clip's sample peak would exceed -1 dBFS there, by 6 dB at most: a clip that would still pass -1 dBFS (a click,
  a burst: far more peak than loudness) gets only the gain that brings its peak to -1 dBFS and is marked
  ``peak_limited`` (quieter than the others) rather than making every clip quiet. Each clip's measured loudness,
  gain and peak go into the key.
- MUSHRA low anchor (BS.1534-3 5.1): the reference low-pass filtered at 3.5 kHz: an 8th-order Butterworth low-pass
  (``scipy.signal.butter``, second-order sections) applied forward and backward (``sosfiltfilt``: zero phase, so
  the anchor stays time-aligned with the reference; the forward-backward magnitude is the square of the
  Butterworth's: -6 dB at 3.5 kHz, about -50 dB at 5 kHz).
- Degraded clip (attention checks, training): the same low-pass plus white Gaussian noise at 0 dB SNR (noise
  power = the filtered signal's power), seeded per source file, so it is clearly worse than any usable system.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from math import gcd
from pathlib import Path

import numpy as np
import soundfile as sf

from clonebench.core.atomic import atomic_write_bytes
from clonebench.core.errors import ClonebenchError
from clonebench.core.hashing import sha256_bytes
from clonebench.data.audio import InvalidAudio, inspect_wav, to_mono

RATE = 48_000
TARGET_LUFS = -23.0
PEAK_CEILING_DBFS = -1.0
MAX_LOWERING_DB = 6.0
LOWPASS = {"cutoff_hz": 3500.0, "order": 8, "design": "scipy.signal.butter(8, 3500, 'low', output='sos')",
           "application": "scipy.signal.sosfiltfilt (zero phase; -6 dB at the cut-off)"}
DEGRADED_SNR_DB = 0.0


@dataclass
class Prepared:
    samples: np.ndarray
    loudness_lufs: float | None    # None: digital silence (no gain applied)


def load_mono(path: Path) -> tuple[np.ndarray, int]:
    try:
        info, samples = inspect_wav(Path(path).read_bytes())
    except InvalidAudio as exc:
        raise ClonebenchError(f"{path}: {exc}") from exc
    return to_mono(samples).astype(np.float64), info.sample_rate


def resample(x: np.ndarray, rate: int, target: int = RATE) -> np.ndarray:
    if rate == target:
        return x
    from scipy.signal import resample_poly

    g = gcd(rate, target)
    return resample_poly(x, target // g, rate // g)


def lowpass_3500(x: np.ndarray, rate: int = RATE) -> np.ndarray:
    from scipy.signal import butter, sosfiltfilt

    sos = butter(LOWPASS["order"], LOWPASS["cutoff_hz"], btype="low", fs=rate, output="sos")
    try:
        return sosfiltfilt(sos, x)
    except ValueError:  # a clip shorter than sosfiltfilt's default edge padding: pad as far as it goes
        return sosfiltfilt(sos, x, padlen=max(len(x) - 1, 0))


def degrade(x: np.ndarray, seed_text: str, rate: int = RATE) -> np.ndarray:
    filtered = lowpass_3500(x, rate)
    power = float(np.mean(filtered ** 2)) or 1e-6
    seed = int.from_bytes(hashlib.sha256(seed_text.encode()).digest()[:8], "little")
    noise = np.random.default_rng(seed).normal(size=len(x)) * np.sqrt(power / 10 ** (DEGRADED_SNR_DB / 10))
    return filtered + noise


def loudness(x: np.ndarray, rate: int = RATE) -> float | None:
    """BS.1770-4 integrated loudness in LUFS (pyloudnorm); None for digital silence."""
    import warnings

    import pyloudnorm

    block = min(0.4, len(x) / rate)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyloudnorm warns on clipping-range input; the peak is handled here
        value = pyloudnorm.Meter(rate, block_size=block).integrated_loudness(x)
    return float(value) if np.isfinite(value) else None


def transformed(path: Path, sha256: str, transform: str) -> Prepared:
    x, rate = load_mono(path)
    x = resample(x, rate)
    if transform == "lowpass_3500":
        x = lowpass_3500(x)
    elif transform == "degraded":
        x = degrade(x, sha256)
    elif transform != "none":
        raise ValueError(transform)
    return Prepared(x, loudness(x))


def peak_db(x: np.ndarray) -> float:
    peak = float(np.max(np.abs(x))) if len(x) else 0.0
    return 20 * np.log10(peak) if peak > 0 else -np.inf


def aligned_target(prepared: list[Prepared]) -> float:
    """The common loudness: TARGET_LUFS, or lower by as much as the clip closest to clipping needs (at most
    MAX_LOWERING_DB lower)."""
    crest = [peak_db(p.samples) - p.loudness_lufs for p in prepared if p.loudness_lufs is not None]
    worst = max(crest, default=-np.inf)  # peak dBFS minus loudness: what a clip at L LUFS peaks at, minus L
    return float(max(min(TARGET_LUFS, PEAK_CEILING_DBFS - worst), TARGET_LUFS - MAX_LOWERING_DB))


def wav_bytes(x: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    sf.write(buffer, np.clip(x, -1.0, 1.0), RATE, subtype="PCM_16", format="WAV")
    return buffer.getvalue()


def write_clips(sources: dict[str, tuple[Path, str, str]], out_dir: Path) -> dict:
    """Write ``out_dir/<clip id>.wav`` for ``{clip id: (path, sha256, transform)}``; return the loudness policy
    and, per clip id, its loudness, gain, peak, duration and file sha256."""
    cache: dict[tuple[str, str], Prepared] = {}
    for path, sha256, transform in sources.values():
        if (sha256, transform) not in cache:
            cache[(sha256, transform)] = transformed(path, sha256, transform)
    target = aligned_target(list(cache.values()))
    records = {}
    for clip_id, (path, sha256, transform) in sources.items():
        prepared = cache[(sha256, transform)]
        gain_db = 0.0 if prepared.loudness_lufs is None else target - prepared.loudness_lufs
        limited = peak_db(prepared.samples) + gain_db > PEAK_CEILING_DBFS
        if limited:
            gain_db = PEAK_CEILING_DBFS - peak_db(prepared.samples)
        y = prepared.samples * 10 ** (gain_db / 20)
        data = wav_bytes(y)
        atomic_write_bytes(Path(out_dir) / f"{clip_id}.wav", data)
        peak = peak_db(y)
        records[clip_id] = {"loudness_lufs": prepared.loudness_lufs, "gain_db": round(gain_db, 4),
                            "peak_dbfs": round(peak, 3) if np.isfinite(peak) else None, "peak_limited": limited,
                            "duration_s": round(len(y) / RATE, 4), "file_sha256": sha256_bytes(data)}
    policy = {"rate_hz": RATE, "format": "WAV PCM_16 mono", "standard": "ITU-R BS.1770-4 integrated loudness "
              "(pyloudnorm)", "target_lufs": round(target, 3), "nominal_target_lufs": TARGET_LUFS,
              "peak_ceiling_dbfs": PEAK_CEILING_DBFS, "max_lowering_db": MAX_LOWERING_DB,
              "rule": "one gain per clip to the same target loudness for every clip (every system, natural "
              "recordings, anchors); silent clips unchanged; a clip whose peak would pass the ceiling even at the "
              "lowest target gets the gain that puts its peak at the ceiling (peak_limited)",
              "peak_limited": sorted(c for c, r in records.items() if r["peak_limited"]),
              "anchor": LOWPASS, "degraded": {"lowpass": LOWPASS, "white_noise_snr_db": DEGRADED_SNR_DB}}
    return {"policy": policy, "clips": records}
