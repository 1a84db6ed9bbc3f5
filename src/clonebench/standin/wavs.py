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


def pcm_only(wav: bytes) -> bytes:
    samples, _ = sf.read(io.BytesIO(wav), dtype="int16")
    return samples.tobytes()
