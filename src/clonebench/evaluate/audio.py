"""Reading WAVs for scoring: soundfile, channel-mean downmix, torchaudio resampling."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf


def load_mono(path: Path, rate: int) -> np.ndarray:
    """Mono float32 samples of ``path`` at ``rate`` Hz (torchaudio's sinc resampler, as SpeechBrain uses)."""
    samples, native = sf.read(str(path), dtype="float32", always_2d=True)
    mono = samples.mean(axis=1)
    if native != rate:
        import torch
        import torchaudio.functional as F

        mono = F.resample(torch.from_numpy(mono), native, rate).numpy()
    return np.ascontiguousarray(mono, dtype=np.float32)
