"""What the failure scorer measures on the audio, without any ASR: speech (VAD), the spoken span against the
duration the text needs at the prompt speaker's rate, repeated audio, clipping, and likeness to the prompt.

The numbers only; ``flags.py`` turns them into flags. Every measure is a function of the clip, the prompt clip,
the two texts and their languages.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np

from clonebench.failures import copy, loops
from clonebench.failures.thresholds import DEFAULT, Thresholds
from clonebench.failures.vad import Speech

# Characters (letters and digits) per second of read speech, for a target whose language differs from its prompt's
# or a prompt without a transcript: typical audiobook rates (LibriTTS, AISHELL/Seed-TTS, CommonVoice reads).
DEFAULT_RATES = {"en": 14.0, "fr": 13.5, "de": 13.0, "es": 14.0, "it": 13.5, "pt": 13.5, "nl": 13.0, "ru": 12.0,
                 "pl": 12.0, "zh": 4.5, "ja": 7.5, "ko": 6.5}
FULL_SCALE = 0.999


def spoken_characters(text: str) -> int:
    """Letters and digits: what takes time to say (spaces and punctuation do not)."""
    return sum(1 for ch in text if unicodedata.category(ch)[0] in "LN")


def base_language(language: str | None) -> str:
    return str(language or "").strip().lower().split("-")[0].split("_")[0]


@dataclass(frozen=True)
class Expected:
    seconds: float | None      # None: no rate known for the language
    source: str                # "prompt" (its transcript and speech) or "language default" or "none"


def expected_duration(target_text: str, language: str, prompt_text: str, prompt_language: str,
                      prompt_speech: Speech | None) -> Expected:
    """Seconds of speech ``target_text`` needs: at the prompt speaker's characters per second when the prompt is in
    the target's language and has a transcript and speech, else at the language's typical rate."""
    chars = spoken_characters(target_text)
    same = base_language(prompt_language or language) == base_language(language)
    prompt_chars = spoken_characters(prompt_text or "")
    if same and prompt_chars and prompt_speech is not None and prompt_speech.span_s > 0.5:
        return Expected(chars / (prompt_chars / prompt_speech.span_s), "prompt")
    rate = DEFAULT_RATES.get(base_language(language))
    return Expected(chars / rate, "language default") if rate else Expected(None, "none")


def syllable_rate(mono_16k: np.ndarray, speech: Speech) -> float | None:
    """Syllable nuclei per second of detected speech: peaks of the 300-2500 Hz band's loudness (25 ms RMS, 10 ms
    hop, dB) standing out by >= 4 dB from their surroundings, >= 80 ms apart, inside speech (the classic
    envelope-peak estimate of speaking rate, de Jong & Wempe 2009, on scipy's filter and peak finder). None with
    under 0.5 s of speech. Only a ratio of two of them is used: the clip's rate against its prompt's."""
    from scipy.signal import butter, find_peaks, sosfiltfilt

    if speech.speech_s < 0.5:
        return None
    band = sosfiltfilt(butter(4, [300, 2500], btype="band", fs=16_000, output="sos"), mono_16k.astype(np.float64))
    hop = 160
    loudness = 20 * np.log10(np.sqrt(np.convolve(band ** 2, np.ones(400) / 400, mode="same"))[::hop] + 1e-6)
    times = np.arange(len(loudness)) * hop / 16_000
    voiced = np.zeros(len(loudness), dtype=bool)
    for start, end in speech.segments:
        voiced |= (times >= start) & (times < end)
    peaks, _ = find_peaks(loudness, prominence=4.0, distance=8)
    return float(np.count_nonzero(voiced[peaks])) / speech.speech_s


def clipped_share(samples: np.ndarray) -> float:
    """Share of samples (every channel) at full scale."""
    return float(np.mean(np.abs(samples) >= FULL_SCALE)) if samples.size else 0.0


@dataclass(frozen=True)
class AudioMeasures:
    duration_s: float
    speech_s: float
    speech_ratio: float
    lead_s: float
    trail_s: float
    span_s: float
    expected_s: float | None
    expected_from: str
    repeat_s: float
    clipped_share: float
    prompt_correlation: float | None   # None: no prompt to compare with
    rate_ratio: float | None = None    # the clip's syllable rate / its prompt's; None: no prompt or too little speech

    def values(self) -> dict:
        return {"fm_duration_s": self.duration_s, "fm_speech_s": self.speech_s, "fm_speech_ratio": self.speech_ratio,
                "fm_lead_s": self.lead_s, "fm_trail_s": self.trail_s, "fm_span_s": self.span_s,
                "fm_expected_s": self.expected_s, "fm_expected_from": self.expected_from,
                "fm_repeat_s": self.repeat_s, "fm_clipped_share": self.clipped_share,
                "fm_prompt_corr": self.prompt_correlation, "fm_rate_ratio": self.rate_ratio}


def prompt_likeness(samples: np.ndarray, rate: int, prompt: tuple[np.ndarray, int] | None,
                    thresholds: Thresholds = DEFAULT) -> float | None:
    """Correlation with the prompt (``copy.copy_correlation``) when the durations agree within the tolerance,
    else 0.0 (a clip of another length is not a copy); None without a prompt."""
    if prompt is None:
        return None
    prompt_samples, prompt_rate = prompt
    seconds, prompt_seconds = len(samples) / rate, len(prompt_samples) / prompt_rate
    if prompt_seconds <= 0 or abs(seconds - prompt_seconds) > thresholds.copy_duration_tolerance * prompt_seconds:
        return 0.0
    return round(copy.copy_correlation(samples, rate, prompt_samples, prompt_rate), 6)


def measure(samples: np.ndarray, rate: int, speech: Speech, mono_16k: np.ndarray, expected: Expected,
            prompt: tuple[np.ndarray, int] | None, thresholds: Thresholds = DEFAULT,
            prompt_syllable_rate: float | None = None) -> AudioMeasures:
    """Every audio measure of one clip (``samples`` at ``rate``; ``speech`` from its 16 kHz mono ``mono_16k``;
    ``prompt_syllable_rate``: ``syllable_rate`` of its prompt)."""
    r = lambda value: round(float(value), 6)  # noqa: E731  (stable JSON)
    own = syllable_rate(mono_16k, speech)
    rate_ratio = r(own / prompt_syllable_rate) if own and prompt_syllable_rate else None
    return AudioMeasures(
        duration_s=r(len(samples) / rate), speech_s=r(speech.speech_s), speech_ratio=r(speech.ratio),
        lead_s=r(speech.lead_s), trail_s=r(speech.trail_s), span_s=r(speech.span_s),
        expected_s=None if expected.seconds is None else r(expected.seconds), expected_from=expected.source,
        repeat_s=r(loops.repeated_seconds(mono_16k, speech.segments, thresholds.repeat_similarity)),
        clipped_share=r(clipped_share(samples)), prompt_correlation=prompt_likeness(samples, rate, prompt, thresholds),
        rate_ratio=rate_ratio)
