"""Failure behaviours: the stand-in answering like a failing cloning model (a valid 200 WAV with bad content).

Unlike the transport faults of ``faults.py`` (which break HTTP), these change only what the audio says:

- ``loop``: the synthesized utterance three times back to back, 0.15 s apart (a model stuck in a loop);
- ``truncate``: the first 40 % of the synthesized utterance (cut mid-sentence);
- ``prompt_copy``: the request's reference (prompt) audio, decoded, downmixed and resampled to the output
  rate (a processed copy, not byte-identical); without a usable reference the answer is normal speech;
- ``silence``: 2 s of near-silence (uniform noise at -70 dBFS RMS), no speech.

A request takes one either from a sticky or queued fault ``{"kind": "behave", "as": NAME}``, or from
fractions (``--behaviours loop=0.25,truncate=0.15`` / ``StandinServer(behaviours=...)``): a hash of the text
and of the reference bytes' sha256 is compared with the cumulative fractions (in the fixed order of
``BEHAVIOURS``), so the same text/reference pair always gets the same behaviour, whatever the order of requests.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Mapping

import numpy as np
import soundfile as sf
from scipy.signal import resample_poly

from clonebench.data.audio import InvalidAudio, read_input_audio, to_mono
from clonebench.standin.voice import OUTPUT_RATE

BEHAVIOURS = ("loop", "truncate", "prompt_copy", "silence")
LOOP_REPEATS, LOOP_GAP_S = 3, 0.15
TRUNCATE_FRACTION = 0.4
SILENCE_S, SILENCE_DBFS = 2.0, -70.0


def check_name(name: object) -> str:
    if name not in BEHAVIOURS:
        raise ValueError(f"unknown failure behaviour {name!r}; allowed: {', '.join(BEHAVIOURS)}")
    return name  # type: ignore[return-value]


def check_fractions(fractions: Mapping[str, float] | None) -> dict[str, float]:
    """Validated ``{behaviour: fraction}``: known names, each fraction in [0, 1], sum at most 1."""
    checked: dict[str, float] = {}
    for name, value in (fractions or {}).items():
        check_name(name)
        try:
            fraction = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"behaviour {name}: fraction {value!r} is not a number") from None
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"behaviour {name}: fraction {value!r} is outside [0, 1]")
        checked[name] = fraction
    if sum(checked.values()) > 1.0 + 1e-9:
        raise ValueError(f"behaviour fractions add up to {sum(checked.values()):g}, more than 1")
    return checked


def parse_behaviours(spec: str) -> dict[str, float]:
    """``"loop=0.25,truncate=0.15"`` -> ``{"loop": 0.25, "truncate": 0.15}`` (validated; empty spec -> ``{}``)."""
    fractions: dict[str, float] = {}
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"behaviour {item!r}: expected NAME=FRACTION, NAME one of {', '.join(BEHAVIOURS)}")
        name = check_name(name.strip())
        if name in fractions:
            raise ValueError(f"behaviour {name!r} given twice")
        fractions[name] = value.strip()  # type: ignore[assignment]
    return check_fractions(fractions)


def pick(text: str, reference_sha256: str, fractions: Mapping[str, float]) -> str | None:
    """The behaviour for this text/reference pair (``None``: answer normally); deterministic, order-free."""
    if not fractions:
        return None
    digest = hashlib.sha256(text.encode("utf-8") + b"\0" + reference_sha256.encode("ascii")).digest()
    point = int.from_bytes(digest[:8], "big") / 2.0**64  # uniform in [0, 1)
    edge = 0.0
    for name in BEHAVIOURS:
        edge += fractions.get(name, 0.0)
        if point < edge:
            return name
    return None


def _wav(samples: np.ndarray) -> bytes:
    out = io.BytesIO()
    sf.write(out, np.clip(samples, -1.0, 1.0).astype(np.float32), OUTPUT_RATE, subtype="PCM_16", format="WAV")
    return out.getvalue()


def _samples(audio: bytes) -> np.ndarray:
    """Mono float32 at ``OUTPUT_RATE`` of a WAV (or any container libsndfile decodes); InvalidAudio else."""
    info, samples = read_input_audio(audio)
    mono = to_mono(samples)
    if info.sample_rate == OUTPUT_RATE:
        return mono
    return resample_poly(mono, OUTPUT_RATE, info.sample_rate).astype(np.float32)


def apply(name: str, speech_wav: bytes, reference_audio: bytes | None, seed: int | None) -> bytes:
    """``speech_wav`` (the normal answer, a WAV at ``OUTPUT_RATE``) changed by behaviour ``name``."""
    check_name(name)
    rng = np.random.default_rng(seed)
    if name == "silence":
        half_width = 10 ** (SILENCE_DBFS / 20) * np.sqrt(3.0)  # uniform noise: RMS = half width / sqrt(3)
        return _wav(rng.uniform(-half_width, half_width, int(SILENCE_S * OUTPUT_RATE)))
    if name == "prompt_copy":
        if not reference_audio:
            return speech_wav
        try:
            return _wav(_samples(reference_audio))
        except InvalidAudio:
            return speech_wav
    speech = _samples(speech_wav)
    if name == "truncate":
        return _wav(speech[: round(len(speech) * TRUNCATE_FRACTION)])
    gap = rng.normal(0.0, 1e-4, int(LOOP_GAP_S * OUTPUT_RATE)).astype(np.float32)  # the dither of the speech
    pieces = [speech]
    for _ in range(LOOP_REPEATS - 1):
        pieces += [gap, speech]
    return _wav(np.concatenate(pieces))
