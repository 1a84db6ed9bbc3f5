"""The crafted failure clips (tests/crafted_failures.py) are what they claim to be: the fixture only, no detector."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import soundfile as sf

from tests.crafted_failures import (
    BLIP_S,
    BLIP_TOTAL_S,
    FLAGS,
    LANGUAGE,
    NOISE_DBFS,
    NOISE_S,
    PROMPT_RESAMPLED_RATE,
    RATE,
    CraftedCase,
    librivox_clips,
)

# A clean skip without eSpeak NG (the crafted_cases fixture itself fails, as the conftest's eSpeak fixtures do).
needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed "
                                  "(bash scripts/setup.sh: apt-get install espeak-ng)")

CASES = ("clean_en", "loop3", "half", "french", "white_noise", "babble", "silence_blip", "mostly_silent", "clipped",
         "prompt_as_is", "prompt_resampled")


def duration(case: CraftedCase) -> float:
    return sf.info(str(case.wav)).duration


def samples(case: CraftedCase) -> tuple[np.ndarray, int]:
    return sf.read(str(case.wav), dtype="float64")


@needs_espeak
def test_every_case_is_a_mono_pcm16_wav_with_consistent_sets(crafted_cases):
    assert tuple(crafted_cases) == CASES
    prompts = {case.prompt_wav for case in crafted_cases.values()}
    assert len(prompts) == 1 and next(iter(prompts)).is_file()
    for name, case in crafted_cases.items():
        info = sf.info(str(case.wav))
        assert case.name == name and case.wav.is_file() and case.wav != case.prompt_wav
        assert info.format == "WAV" and info.subtype == "PCM_16" and info.channels == 1
        assert info.samplerate == (PROMPT_RESAMPLED_RATE if name == "prompt_resampled" else RATE)
        assert case.language == LANGUAGE and case.prompt_text and case.target_text != case.prompt_text
        assert isinstance(case.expected, frozenset) and isinstance(case.forbidden, frozenset)
        assert case.expected | case.forbidden <= FLAGS and not case.expected & case.forbidden
        assert case.note
    assert crafted_cases["clean_en"].forbidden == FLAGS and not crafted_cases["clean_en"].expected
    assert crafted_cases["loop3"].expected == {"looping", "overlong"}
    assert crafted_cases["white_noise"].expected == {"silent"}
    assert crafted_cases["white_noise"].forbidden == {"prompt_copy", "clipping"}
    assert crafted_cases["babble"].expected == {"babble"} and crafted_cases["babble"].forbidden == {"prompt_copy"}
    for name in ("prompt_as_is", "prompt_resampled"):
        assert crafted_cases[name].expected == {"prompt_copy"}


@needs_espeak
def test_durations_are_as_designed(crafted_cases):
    clean = duration(crafted_cases["clean_en"])
    assert 2.5 < clean < 6.5
    assert 2.0 < sf.info(str(crafted_cases["clean_en"].prompt_wav)).duration < 4.5
    assert 0.75 * 3 * clean <= duration(crafted_cases["loop3"]) <= 1.25 * 3 * clean
    assert 0.75 * 0.5 * clean <= duration(crafted_cases["half"]) <= 1.25 * 0.5 * clean
    assert duration(crafted_cases["clipped"]) == pytest.approx(clean, abs=1e-3)
    assert duration(crafted_cases["white_noise"]) == pytest.approx(NOISE_S, abs=1e-3)
    assert duration(crafted_cases["silence_blip"]) == pytest.approx(BLIP_TOTAL_S, abs=1e-3)
    assert duration(crafted_cases["mostly_silent"]) == pytest.approx(6.8, abs=1e-3)


@needs_espeak
def test_level_and_content_properties(crafted_cases):
    clipped, _ = samples(crafted_cases["clipped"])
    assert np.mean(np.abs(clipped) >= 0.999) > 0.01
    for name in set(CASES) - {"clipped"}:
        assert np.abs(samples(crafted_cases[name])[0]).max() < 0.95, name

    noise, _ = samples(crafted_cases["white_noise"])
    assert 20 * np.log10(np.sqrt(np.mean(noise ** 2))) == pytest.approx(NOISE_DBFS, abs=0.1)

    blip, rate = samples(crafted_cases["silence_blip"])
    loud = np.nonzero(np.abs(blip) > 1e-3)[0]
    assert (loud[-1] - loud[0]) / rate <= BLIP_S
    assert abs((loud[0] + loud[-1]) / 2 / rate - BLIP_TOTAL_S / 2) < 0.01  # the peak is the blip, in the middle
    assert abs(np.argmax(np.abs(blip)) / rate - BLIP_TOTAL_S / 2) < BLIP_S / 2

    quiet, rate = samples(crafted_cases["mostly_silent"])
    assert np.abs(quiet[int(0.8 * rate):]).max() == 0.0 and np.abs(quiet[:int(0.8 * rate)]).max() > 0.1


@needs_espeak
def test_prompt_copies(crafted_cases):
    prompt = crafted_cases["prompt_as_is"].prompt_wav
    assert crafted_cases["prompt_as_is"].wav.read_bytes() == prompt.read_bytes()
    resampled = crafted_cases["prompt_resampled"]
    assert sf.info(str(resampled.wav)).samplerate == 22050
    assert sf.info(str(resampled.wav)).duration == pytest.approx(sf.info(str(prompt)).duration, abs=0.01)
    original, _ = sf.read(str(prompt), dtype="float64")
    assert np.abs(samples(resampled)[0]).max() == pytest.approx(0.8 * np.abs(original).max(), rel=0.1)


def test_librivox_clips_have_transcripts():
    clips = librivox_clips()
    for wav, text in clips:
        assert wav.is_file() and wav.suffix == ".wav" and text and text == text.strip()
