"""Audio bodies for the stand-in's faults and quirks."""

from __future__ import annotations

import io

import numpy as np
import soundfile as sf

from clonebench.standin.voice import OUTPUT_RATE


def nan_wav() -> bytes:
    samples = np.zeros(4410, dtype=np.float32)
    samples[100:200] = np.nan
    out = io.BytesIO()
    sf.write(out, samples, OUTPUT_RATE, subtype="FLOAT", format="WAV")
    return out.getvalue()


def tone(request: dict, style: dict, seconds: float = 0.0) -> bytes:
    """A short tone (pitch from the style, length from the text unless given, seeded dither): for load benchmarks
    and scripted streaming profiles only."""
    seconds = seconds or min(10.0, 0.06 * max(1, len(request["text"])))
    t = np.arange(int(seconds * OUTPUT_RATE)) / OUTPUT_RATE
    rng = np.random.default_rng(request["seed"])
    samples = 0.2 * np.sin(2 * np.pi * (110 + 3 * style["pitch"]) * t) + rng.normal(0, 1e-4, t.shape)
    out = io.BytesIO()
    sf.write(out, samples.astype(np.float32), OUTPUT_RATE, subtype="PCM_16", format="WAV")
    return out.getvalue()


def pcm_only(wav: bytes) -> bytes:
    samples, _ = sf.read(io.BytesIO(wav), dtype="int16")
    return samples.tobytes()


def silence(seconds: float, seed: int | None) -> bytes:
    """Near-silence (seeded -80 dBFS dither) as a PCM16 WAV."""
    rng = np.random.default_rng(seed)
    out = io.BytesIO()
    sf.write(out, rng.normal(0, 1e-4, int(seconds * OUTPUT_RATE)).astype(np.float32), OUTPUT_RATE, subtype="PCM_16",
             format="WAV")
    return out.getvalue()
