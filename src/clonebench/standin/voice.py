"""Speech for the stand-in server: eSpeak NG says the text in a voice whose pitch and rate follow the reference.

This is not voice cloning. The reference recording's median F0 picks eSpeak's pitch (and a male or
female variant), its speaking rate (prompt words per second) picks eSpeak's speed, so different
references give different, intelligible audio, and a server that ignores its reference can be told
apart from one that does not.
"""

from __future__ import annotations

import io
import shutil
import subprocess

import numpy as np
import soundfile as sf
from scipy.signal import resample_poly

from clonebench.data.audio import read_input_audio, to_mono
from clonebench.data.voice_features import median_f0

OUTPUT_RATE = 44_100  # Fish S2's codec rate
LANGUAGE_VOICES = {"en": "en-us", "de": "de", "fr": "fr", "es": "es", "it": "it", "zh": "cmn", "ja": "ja",
                   "pt": "pt", "nl": "nl", "ru": "ru", "ko": "ko", "pl": "pl"}
DEFAULT_STYLE = {"pitch": 50, "speed": 165, "variant": "m3"}


class SpeechError(RuntimeError):
    pass


def espeak_binary() -> str:
    path = shutil.which("espeak-ng")
    if path is None:
        raise SpeechError("espeak-ng is not installed (Debian: apt-get install espeak-ng)")
    return path


def reference_style(reference_wav: bytes, reference_text: str) -> dict:
    """eSpeak pitch (0-99), speed (words/min) and variant following the reference recording."""
    info, samples = read_input_audio(reference_wav)  # WAV, or an MP3/FLAC/OGG reference (as real servers decode)
    mono = to_mono(samples)
    f0 = median_f0(mono, info.sample_rate)
    words = max(1, len(reference_text.split()))
    wpm = 60.0 * words / max(info.duration_s, 0.5)
    style = dict(DEFAULT_STYLE)
    if f0 is not None:
        style["pitch"] = int(np.clip(round((f0 - 70.0) / 230.0 * 99), 0, 99))
        style["variant"] = "f3" if f0 >= 165.0 else "m3"
    style["speed"] = int(np.clip(round(wpm), 90, 320))
    style["f0_hz"] = None if f0 is None else round(f0, 2)
    return style


def espeak(text: str, voice_name: str, pitch: int, speed: int, rate: int) -> np.ndarray:
    """Mono float32 speech from eSpeak NG, resampled to ``rate`` Hz (text goes in on stdin, never argv)."""
    command = [espeak_binary(), "--stdout", "-v", voice_name, "-p", str(pitch), "-s", str(speed)]
    result = subprocess.run(command, input=text.encode("utf-8"), capture_output=True, timeout=120)
    if result.returncode != 0 or not result.stdout:
        raise SpeechError(f"espeak-ng failed: {result.stderr.decode('utf-8', 'replace')[:200]}")
    audio, native = sf.read(io.BytesIO(result.stdout), dtype="float32")
    audio = to_mono(audio) if audio.ndim == 2 else audio
    return resample_poly(audio, rate, native).astype(np.float32)


def text_language(text: str) -> str:
    """The language the stand-in speaks ``text`` in: Mandarin when it holds CJK ideographs (as Fish S2 reads the
    text's own script; the request carries no language), else English."""
    return "zh" if any("\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" for ch in text) else "en"


def synthesize(text: str, language: str, style: dict, seed: int | None) -> bytes:
    """44.1 kHz mono PCM16 WAV of ``text``; a seeded -80 dBFS dither makes unseeded requests differ like a model's."""
    base = LANGUAGE_VOICES.get(language.lower().split("-")[0], "en-us")
    audio = espeak(text, f"{base}+{style['variant']}", style["pitch"], style["speed"], OUTPUT_RATE)
    rng = np.random.default_rng(seed)
    audio = audio + rng.normal(0.0, 1e-4, size=audio.shape).astype(np.float32)
    out = io.BytesIO()
    sf.write(out, np.clip(audio, -1.0, 1.0), OUTPUT_RATE, subtype="PCM_16", format="WAV")
    return out.getvalue()
