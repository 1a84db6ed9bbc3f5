"""Reading audio for scoring exactly as each reference library reads it (a metric is a function of the file).

Each scorer uses its reference's own loader: SpeechBrain's ``audio_io.load`` + ``audio_normalizer`` (ecapa.py),
``whisper.audio.load_audio`` / ``faster_whisper.audio.decode_audio`` (the Whisper scorers), pymcd its own.
The two shared here are the ones whose reference is a generic loader; ``header_seconds`` reads only a WAV's
header, for the duration checks before scoring.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import soundfile as sf

from clonebench.core.untrusted import open_regular
from clonebench.data.audio import HEADER_BYTES, wav_header_duration


def load_librosa_16k(path: Path) -> np.ndarray:
    """``librosa.load(path, sr=16000)``: soundfile read, channel mean, soxr_hq resampling, float32 (DNSMOS)."""
    import librosa

    audio, _ = librosa.load(str(path), sr=16_000)
    return audio


def load_torchaudio_like(path: Path):
    """What ``torchaudio.load(path)`` returns for a WAV, without torchcodec: a float32 tensor (channels, frames)
    scaled to [-1, 1] as its ``normalize=True`` does (integer PCM / 2**(bits-1); float samples as stored), and
    the rate. soundfile's float32 read applies the same scaling."""
    import soundfile as sf
    import torch

    samples, rate = sf.read(str(path), dtype="float32", always_2d=True)
    return torch.from_numpy(np.ascontiguousarray(samples.T)), rate


def mono_then_resample(path: Path, rate: int):
    """rvcbench 2.2.1's scorer loading (its ``STOIScorer``): soundfile float32, the channel mean, then
    ``torchaudio.functional.resample`` of the mono signal to ``rate`` (skipped at that rate). A 1-D float32 tensor.
    (Downmixing before resampling rounds differently from resampling each channel first.)"""
    import soundfile as sf
    import torch
    import torchaudio.functional as F

    samples, native = sf.read(str(path), dtype="float32", always_2d=True)
    wave = torch.from_numpy(samples.mean(axis=1))
    return F.resample(wave, native, rate) if native != rate else wave


def resample_mono_torchaudio(path: Path, rate: int):
    """Upstream RVCBench's pair loading: ``torchaudio.load``, ``torchaudio.functional.resample`` per channel to
    ``rate``, then the channel mean. A 1-D float32 tensor."""
    import torchaudio.functional as F

    wave, native = load_torchaudio_like(path)
    if native != rate:
        wave = F.resample(wave, native, rate)
    return wave.mean(dim=0)


def header_seconds(path: Path, within: Path | None = None) -> float | None:
    """The duration a WAV's header declares, from its first bytes (nothing decoded); None when the quick parse
    cannot tell (the file was validated in full already, so soundfile's header reading is used then)."""
    fd, info = open_regular(path, within=within, what="generated WAV")
    try:
        head = os.read(fd, HEADER_BYTES)
    finally:
        os.close(fd)
    seconds = wav_header_duration(head, info.st_size)
    if seconds is None:
        try:
            meta = sf.info(str(path))
            seconds = meta.frames / meta.samplerate if meta.samplerate else None
        except (sf.LibsndfileError, RuntimeError):
            return None
    return seconds
