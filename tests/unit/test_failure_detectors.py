"""The failure_modes_v2 detectors without an ASR model: the two-view babble and wrong_language rules and the
transcript's truncation on both sides of their thresholds, the transcript alignment they read, and the
time-warped loop measure on clips of the labelled set (bench/failure_set.py) it must catch (a phrase repeated
with +-3 % tempo and pitch per repeat, re-synthesised at another speed and pitch) and must not (single sentences,
slow speech, pauses, real LibriVox speech). The whole set is only scored by bench/failure_accuracy.py."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from clonebench.failures.flags import asr_flags
from clonebench.failures.text import coverage, matched, unmatched_share
from clonebench.failures.thresholds import DEFAULT as T

TEXT = "after dinner we sat on the porch and listened to the rain falling on the roof"  # 16 words
EPS = 1e-3


def row(**changes) -> dict:
    """Whisper values of a clip that says its text (forced log-prob measured), with ``changes``."""
    base = {"target_text": TEXT, "hypothesis": TEXT, "language": "en", "wer": 0.0, "text_rule": "x",
            "asr_logprob": -0.2, "asr_no_speech": 0.01, "asr_language": "en", "asr_language_prob": 0.95,
            "asr_target_prob": 0.95, "asr_text_logprob": -0.3, "fm_expected_s": 4.0}
    return {**base, **changes}


FLUENT_NONSENSE = "we will not allow anyone to send a silken ash off unless you go live as fast"
HALF = "after dinner we sat on the porch and"  # 8 of 16 words
TWELVE = "after dinner we sat on the porch and listened to the rain"  # 12 of 16: 0.75
THIRTEEN = TWELVE + " falling"  # 13 of 16: 0.81


@pytest.mark.parametrize("changes, raised", [
    ({}, set()),
    # babble: Whisper confident (log-prob -1.0, no-speech 0.09) on a fluent transcript that is not the text
    ({"hypothesis": FLUENT_NONSENSE, "wer": 1.06, "asr_logprob": -1.0, "asr_no_speech": 0.09,
      "asr_text_logprob": T.text_logprob}, {"babble"}),
    ({"hypothesis": FLUENT_NONSENSE, "wer": 1.06, "asr_text_logprob": T.text_logprob + EPS}, set()),
    ({"hypothesis": "", "wer": 1.0, "asr_text_logprob": -5.0}, {"babble"}),  # nothing heard: none of it the text
    # an accent Whisper misheard: many words wrong, but the audio supports the text
    ({"hypothesis": "after dinner we set on a perch and listen to their rain for long on the roof", "wer": 0.5,
      "asr_logprob": -1.5, "asr_no_speech": 0.5, "asr_text_logprob": -1.7}, set()),
    # a clip cut short: the text unlikely as a whole, but what it says is the text's start
    ({"hypothesis": HALF, "wer": 0.5, "asr_text_logprob": -4.0}, {"truncated"}),
    ({"hypothesis": TWELVE, "wer": 0.25, "asr_text_logprob": T.truncated_text_logprob}, {"truncated"}),
    ({"hypothesis": THIRTEEN, "wer": 0.19, "asr_text_logprob": -2.5}, set()),  # 0.81 of the text: not cut
    ({"hypothesis": TWELVE, "wer": 0.25, "asr_text_logprob": T.truncated_text_logprob + EPS}, set()),  # supported
    ({"hypothesis": TWELVE, "wer": 0.25, "asr_text_logprob": None}, set()),  # no forced view: not judged
    ({"hypothesis": "the", "wer": 0.94, "asr_text_logprob": -3.8}, set()),  # one stray word: not a cut text
    ({"hypothesis": TEXT + " and then it stopped", "wer": 0.3}, set()),
    ({"hypothesis": HALF, "asr_text_logprob": -4.0, "fm_expected_s": T.min_expected_s - EPS}, set()),  # too short
    # wrong language: another language with margin AND the audio does not support the text
    ({"asr_language": "zh", "asr_language_prob": 0.8, "asr_target_prob": 0.13, "asr_text_logprob": -4.0,
      "hypothesis": "wan fan hou wo men zuo zai men lang shang", "wer": 1.0}, {"wrong_language", "babble"}),
    ({"asr_language": "th", "asr_language_prob": 0.23, "asr_target_prob": 0.08, "asr_text_logprob": -1.2},
     set()),  # an accent heard as Thai: the text is still said
    ({"asr_language": "fr", "asr_target_prob": T.target_language_max, "asr_text_logprob": T.text_logprob},
     {"wrong_language"}),
    ({"asr_language": "fr", "asr_target_prob": T.target_language_max + EPS, "asr_text_logprob": -6.0}, set()),
    ({"asr_language": "fr", "asr_language_prob": T.language_confident - EPS, "asr_target_prob": 0.0,
      "asr_text_logprob": T.text_logprob + EPS}, set()),  # unsure of French, and the text is likely
    # sure of another language: Whisper with <|en|> half-translates a Spanish rendering of the text's meaning
    ({"asr_language": "es", "asr_language_prob": T.language_confident, "asr_target_prob":
      T.target_language_probability, "asr_text_logprob": -2.1}, {"wrong_language"}),
    ({"asr_language": "es", "asr_language_prob": 0.93, "asr_target_prob": T.target_language_probability + EPS,
      "asr_text_logprob": -2.1}, set()),
])
def test_two_view_rules_at_their_thresholds(changes, raised):
    assert set(asr_flags(row(**changes), silent=False)) == raised


def test_truncation_at_the_clips_own_pace():
    """A slow voice cut at half: its span is 0.69 x the duration expected at the prompt's rate (above
    truncated_ratio), but it speaks at 0.75 x the prompt's syllable rate: 0.52 at its own pace."""
    from clonebench.failures.flags import audio_flags

    values = {"fm_speech_s": 2.0, "fm_speech_ratio": 0.9, "fm_lead_s": 0.05, "fm_trail_s": 0.05, "fm_span_s": 2.76,
              "fm_expected_s": 4.0, "fm_repeat_s": 0.1, "fm_clipped_share": 0.0, "fm_prompt_corr": 0.0}
    assert audio_flags({**values, "fm_rate_ratio": None}) == {}  # no prompt rate: the plain ratio only
    assert set(audio_flags({**values, "fm_rate_ratio": 0.75})) == {"truncated"}
    assert audio_flags({**values, "fm_rate_ratio": T.truncated_rate_ratio / 0.69 + EPS}) == {}
    slow_and_whole = {**values, "fm_span_s": 5.2, "fm_rate_ratio": 0.72}  # 1.3 x expected, 0.94 at its pace
    assert audio_flags(slow_and_whole) == {}


def test_an_english_only_model_judges_only_english_texts():
    """tiny.en forces a French text through an English-only decoder: unlikely whatever the audio says."""
    french = row(language="fr", target_text="apres le diner nous nous sommes assis",
                 hypothesis="up there lady nay up there lady nay up there lady nay",
                 wer=1.0, asr_logprob=-1.5, asr_text_logprob=-3.8, asr_language="", asr_language_prob=None,
                 asr_target_prob=None)
    assert asr_flags(french, silent=False) == {}
    english_only_on_english = {**french, "language": "en"}  # the same numbers for an English text: babble
    assert set(asr_flags(english_only_on_english, silent=False)) == {"babble", "looping"}


def test_without_the_forced_view_the_v1_rules_apply():
    v1 = row(asr_text_logprob=None, hypothesis=FLUENT_NONSENSE, wer=1.06, asr_logprob=-1.0, asr_no_speech=0.09)
    assert "babble" not in asr_flags(v1, silent=False)  # Whisper sure: v1 misses it (the reason for v2)
    assert "babble" in asr_flags({**v1, "asr_logprob": T.babble_logprob}, silent=False)
    lang = row(asr_text_logprob=None, asr_language="fr", asr_target_prob=T.target_language_probability)
    assert set(asr_flags(lang, silent=False)) == {"wrong_language"}


def test_transcript_alignment():
    assert matched("After dinner, we SAT!", TEXT, "en") == (4, 16, 4, 4)
    assert coverage(HALF, TEXT, "en") == (0.5, 1.0) and unmatched_share(HALF, TEXT, "en") == 0.0
    assert coverage("the roof", TEXT, "en") == (1.0, 2 / 16)  # how far it reaches, and how much of that it says
    assert unmatched_share("", TEXT, "en") == 1.0 and coverage("anything", "", "en") is None
    assert coverage("", TEXT, "en") == (0.0, 0.0)
    assert unmatched_share(FLUENT_NONSENSE, TEXT, "en") > 0.7
    zh = "今天天气很好我们去公园散步吧"
    assert coverage(zh[:7], zh, "zh") == (pytest.approx(7 / 14), 1.0)  # characters for Chinese


needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed "
                                  "(bash scripts/setup.sh: apt-get install espeak-ng)")


def repeated(audio: np.ndarray) -> float:
    from clonebench.failures.loops import repeated_seconds

    return repeated_seconds(audio.astype(np.float32), ((0.0, len(audio) / 16_000),), T.repeat_similarity)


@needs_espeak
def test_loops_are_caught_through_tempo_and_pitch_jitter():
    from bench.failure_set import espeak_with, played_faster
    from tests.crafted_failures import espeak_wav

    rng = np.random.default_rng(3)
    phrase = "the old bridge across the river"
    one = espeak_wav(phrase, "en-gb-scotland+m3", 165)
    gap = np.zeros(2400)
    jittered = np.concatenate([np.concatenate([played_faster(one, 1 + rng.uniform(-0.03, 0.03)), gap])
                               for _ in range(4)])
    resynth = np.concatenate([np.concatenate([espeak_with(phrase, "en-us+f2", speed, "-p", str(pitch)), gap])
                              for speed, pitch in ((158, 40), (170, 62), (163, 50))])
    for loop in (jittered, resynth):
        assert repeated(loop) >= T.repeat_s + 0.5
    sentence = "The teacher asked every student to read a short story aloud in front of the class."
    for voice, speed in (("en-us+m1", 165), ("en-029+f3", 118), ("en-gb-x-rp+m2", 230)):
        assert repeated(espeak_wav(sentence, voice, speed)) < T.repeat_s - 0.5, (voice, speed)
    with_pauses = espeak_with(sentence, "en-us+m7", 165, "-g", "15")
    assert repeated(with_pauses) < T.repeat_s - 0.3


def test_real_speech_has_no_long_repeat():
    from bench.failure_set import read_16k
    from tests.crafted_failures import librivox_clips

    clips = librivox_clips()
    if not clips:
        pytest.fail("pocketsphinx-testdata is missing: run `bash scripts/setup.sh`")
    for wav, _ in clips:
        assert repeated(read_16k(wav)) < T.repeat_s / 2, wav.name
