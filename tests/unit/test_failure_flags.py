"""The failure-modes rules (clonebench.failures) without any ASR model: each flag on both sides of its threshold,
the text repeats, the failure rates' Wilson intervals, the expected duration, clipping and copy correlation, then
the audio flags of the failure scorer (Silero VAD, no Whisper) on the crafted clips and on real LibriVox speech."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys

import numpy as np
import pytest
from scipy.signal import resample_poly
from scipy.stats import binomtest, norm

from clonebench.failures import rates
from clonebench.failures.copy import copy_correlation
from clonebench.failures.flags import asr_flags, audio_flags, finalise
from clonebench.failures.measure import (
    DEFAULT_RATES,
    clipped_share,
    expected_duration,
    spoken_characters,
)
from clonebench.failures.text import repeat_excess
from clonebench.failures.thresholds import DEFAULT, FLAGS, Thresholds, describe
from clonebench.failures.vad import Speech

AUDIO_FLAGS = frozenset({"silent", "mostly_silent", "truncated", "overlong", "looping", "clipping", "prompt_copy"})


def healthy(**changes) -> dict:
    """The fm_* measurements of a clip that raises no audio flag, with ``changes``."""
    values = {"fm_duration_s": 3.2, "fm_speech_s": 3.0, "fm_speech_ratio": 0.9, "fm_lead_s": 0.1, "fm_trail_s": 0.1,
              "fm_span_s": 3.0, "fm_expected_s": 3.0, "fm_expected_from": "prompt", "fm_repeat_s": 0.1,
              "fm_clipped_share": 0.0, "fm_prompt_corr": 0.0}
    return {**values, **changes}


def test_healthy_values_raise_nothing_and_every_flag_is_described():
    assert audio_flags(healthy()) == {}
    for flag in FLAGS:
        assert describe(flag).startswith(f"{flag}: ")
    assert f"{DEFAULT.silent_speech_s:g} s" in describe("silent")
    assert f"{DEFAULT.copy_correlation:g}" in describe("prompt_copy")
    assert "9 s" in describe("silent", Thresholds(silent_speech_s=9.0))


T = DEFAULT
EPS = 1e-3
E = 10.0  # an expected duration of 10 s

# (changes, the audio flags raised): each threshold (read from DEFAULT) just below, at and just above
@pytest.mark.parametrize("changes, raised", [
    ({"fm_speech_s": T.silent_speech_s - EPS}, {"silent"}),
    ({"fm_speech_s": T.silent_speech_s}, set()),  # "shorter than": at the threshold is speech
    ({"fm_speech_s": 0.0, "fm_speech_ratio": 0.0, "fm_lead_s": 4.0, "fm_trail_s": 4.0, "fm_span_s": 0.0},
     {"silent"}),  # silent: neither mostly_silent nor truncated
    ({"fm_speech_s": None, "fm_span_s": None}, {"silent"}),  # missing speech counts as none
    ({"fm_speech_ratio": T.mostly_silent_ratio - EPS}, {"mostly_silent"}),
    ({"fm_speech_ratio": T.mostly_silent_ratio}, set()),
    ({"fm_lead_s": T.edge_silence_s + EPS}, {"mostly_silent"}),
    ({"fm_lead_s": T.edge_silence_s}, set()),
    ({"fm_trail_s": T.edge_silence_s + EPS}, {"mostly_silent"}),
    ({"fm_trail_s": T.edge_silence_s}, set()),
    ({"fm_expected_s": E, "fm_span_s": E * T.truncated_ratio - 0.1}, {"truncated"}),
    ({"fm_expected_s": E, "fm_span_s": E * T.truncated_ratio}, set()),
    ({"fm_expected_s": E, "fm_span_s": E * T.truncated_ratio + 0.1}, set()),
    ({"fm_expected_s": E, "fm_span_s": E * T.overlong_ratio - 0.1}, set()),
    ({"fm_expected_s": E, "fm_span_s": E * T.overlong_ratio}, set()),
    ({"fm_expected_s": E, "fm_span_s": E * T.overlong_ratio + 0.1}, {"overlong"}),
    # min_expected_s: checked from that expected duration on, not below
    ({"fm_expected_s": T.min_expected_s, "fm_span_s": T.min_expected_s * T.overlong_ratio + 1}, {"overlong"}),
    ({"fm_expected_s": T.min_expected_s - EPS, "fm_span_s": T.min_expected_s * T.overlong_ratio + 1}, set()),
    ({"fm_expected_s": T.min_expected_s - EPS, "fm_span_s": 0.1}, set()),
    ({"fm_expected_s": None, "fm_span_s": 50.0}, set()),  # no rate known: no duration check
    ({"fm_repeat_s": T.repeat_s}, {"looping"}),
    ({"fm_repeat_s": T.repeat_s - EPS}, set()),
    ({"fm_clipped_share": T.clipped_share}, {"clipping"}),
    ({"fm_clipped_share": T.clipped_share * 0.99}, set()),
    ({"fm_prompt_corr": T.copy_correlation}, {"prompt_copy"}),
    ({"fm_prompt_corr": T.copy_correlation - EPS}, set()),
    ({"fm_prompt_corr": None}, set()),  # no prompt
    ({"fm_speech_ratio": T.mostly_silent_ratio / 2, "fm_repeat_s": T.repeat_s + 1, "fm_clipped_share": 0.5},
     {"mostly_silent", "looping", "clipping"}),
])
def test_audio_flags_at_their_thresholds(changes, raised):
    found = audio_flags(healthy(**changes))
    assert set(found) == raised
    assert all(detail for detail in found.values())


def test_audio_flags_follow_the_thresholds_given():
    assert audio_flags(healthy(fm_repeat_s=0.5), Thresholds(repeat_s=0.5)) == {
        "looping": "0.50 s of audio repeated (>= 0.5 s)"}
    assert "truncated" in audio_flags(healthy(fm_expected_s=10.0, fm_span_s=8.5), Thresholds(truncated_ratio=0.9))
    assert audio_flags(healthy(fm_expected_s=10.0, fm_span_s=8.5), Thresholds(truncated_ratio=0.8)) == {}


def asr_row(**changes) -> dict:
    """The Whisper values of a clip that raises no ASR flag, with ``changes``."""
    row = {"target_text": "one two three four five six seven eight nine ten",
           "hypothesis": "one two three four five six seven eight nine ten", "language": "en", "wer": 0.0,
           "text_rule": "ascii_punctuation_removed_v2", "asr_logprob": -0.2, "asr_no_speech": 0.01,
           "asr_language": "en", "asr_language_prob": 0.98, "asr_target_prob": 0.98}
    return {**row, **changes}


SIX = "alpha bravo charlie delta echo foxtrot"  # 6 words: 4 trigrams


LOW, UNSURE = T.babble_logprob - 1, T.babble_no_speech + 0.1  # each alone makes a transcript unsure
SURE = {"asr_logprob": T.babble_logprob + EPS, "asr_no_speech": T.babble_no_speech - EPS}


@pytest.mark.parametrize("changes, raised", [
    ({}, set()),
    ({"hypothesis": None}, set()),  # no Whisper values: no ASR flag, whatever else the row says
    # looping (n = 3 words, min_repeats 2, repeat_excess 0.5): 1 extra; 2 extra, 2/4 per trigram; 2 extra, 2/8
    ({"target_text": SIX, "hypothesis": SIX + " alpha bravo charlie"}, set()),
    ({"target_text": SIX, "hypothesis": SIX + " alpha bravo charlie delta"}, {"looping"}),
    ({"hypothesis": "one two three four five six seven eight nine ten one two three four"}, set()),
    # babble: error >= babble_error with log-prob <= babble_logprob (or none) or no-speech >= babble_no_speech
    ({"wer": T.babble_error, "asr_logprob": T.babble_logprob}, {"babble"}),
    ({"wer": T.babble_error - EPS, "asr_logprob": LOW, "asr_no_speech": UNSURE}, set()),
    ({"wer": T.babble_error + 0.3, **SURE}, set()),
    ({"wer": T.babble_error + 0.3, **SURE, "asr_no_speech": T.babble_no_speech}, {"babble"}),
    ({"wer": T.babble_error + 0.3, "asr_logprob": None, "asr_no_speech": None}, {"babble"}),  # no confidence
    ({"wer": None, "asr_logprob": LOW}, set()),
    ({"text_rule": "zh_jieba", "wer": 0.9, "cer": T.babble_error - 0.1, "asr_logprob": LOW}, set()),  # the CER
    ({"text_rule": "zh_jieba", "wer": 0.0, "cer": T.babble_error, "asr_logprob": LOW}, {"babble"}),
    # wrong_language: another language heard and the text's own given <= target_language_probability
    ({"asr_language": "fr", "asr_target_prob": T.target_language_probability}, {"wrong_language"}),
    ({"asr_language": "fr", "asr_target_prob": T.target_language_probability + EPS}, set()),
    ({"asr_language": "fr", "asr_target_prob": None}, set()),  # tiny.en: no language identification
    ({"asr_language": None, "asr_target_prob": 0.0}, set()),
    ({"asr_language": "en", "asr_target_prob": 0.0}, set()),
    ({"language": "en-US", "asr_language": "en", "asr_target_prob": 0.0}, set()),
    ({"language": "zh", "asr_language": "yue", "asr_target_prob": 0.0, "target_text": "你好", "hypothesis": "你好"},
     set()),
    ({"language": "nb", "asr_language": "no", "asr_target_prob": 0.0}, set()),
])
def test_asr_flags_at_their_thresholds(changes, raised):
    assert set(asr_flags(asr_row(**changes), silent=False)) == raised


def test_a_silent_clip_is_not_judged_for_babble_or_language_but_for_repeats():
    row = asr_row(wer=1.0, asr_logprob=LOW, asr_language="fr", asr_target_prob=0.0,
                  target_text=SIX, hypothesis=" ".join([SIX] * 3))
    assert set(asr_flags(row, silent=False)) == {"looping", "babble", "wrong_language"}
    assert set(asr_flags(row, silent=True)) == {"looping"}


def test_repeat_excess_words_and_characters():
    ref = "one two three four five"  # 3 trigrams
    assert repeat_excess(ref, ref, "en", 3) == (0, 0.0)
    assert repeat_excess(f"{ref} {ref}", ref, "en", 3) == (3, 1.0)
    assert repeat_excess("One, TWO three! one two three", "one two three", "en", 3) == (1, 1.0)  # case, punctuation
    assert repeat_excess("the cat sat the cat sat", "the cat sat the cat sat", "en", 3) == (0, 0.0)  # the text's own
    assert repeat_excess("", ref, "en", 3) == (0, 0.0)
    assert repeat_excess("a b a b", "", "en", 3) == (0, 0.0)
    assert repeat_excess("don't stop don't stop don't stop", "don't stop", "en", 1) == (4, 2.0)  # apostrophes
    # Chinese: characters, n-grams of 2 x 3 = 6 characters; punctuation does not count
    zh = "今天天气很好我们去公园散步吧"  # 14 characters: 9 six-grams
    assert repeat_excess(zh, zh, "zh", 3) == (0, 0.0)
    assert repeat_excess(f"{zh}，{zh}。", zh, "zh", 3) == (9, 1.0)
    assert repeat_excess(zh + zh, zh, "en", 3) == (9, 1.0)  # the script decides too, whatever the language
    assert repeat_excess(zh + zh[:7], zh, "zh", 3) == (2, pytest.approx(2 / 9))
    flagged = asr_flags(asr_row(language="zh", target_text=zh, hypothesis=zh * 2, wer=0.0, cer=0.0), silent=False)
    assert set(flagged) == {"looping"}


def test_finalise_merges_audio_and_asr_flags_in_protocol_order():
    untouched = asr_row()
    finalise(untouched)
    assert "fail" not in untouched  # no failure measurements: no verdict

    row = {**healthy(), **asr_row()}
    finalise(row)
    assert (row["fail"], row["failures"], row["failure_detail"]) == (0.0, "", "")

    row = {**healthy(fm_repeat_s=2.0, fm_clipped_share=0.01),
           **asr_row(target_text=SIX, hypothesis=" ".join([SIX] * 3), wer=0.9, asr_logprob=LOW)}
    finalise(row)
    assert row["fail"] == 1.0 and row["failures"] == "looping;babble;clipping"
    looping = row["failure_detail"].split(" | ")[0]
    assert looping.startswith("looping: 2.00 s of audio repeated") and "; 10 repeated n-grams" in looping

    silent = {**healthy(fm_speech_s=0.0, fm_speech_ratio=0.0, fm_span_s=0.0),
              **asr_row(wer=1.0, asr_logprob=LOW, asr_language="fr", asr_target_prob=0.0)}
    finalise(silent)
    assert silent["failures"] == "silent" and silent["fail"] == 1.0

    audio_only = healthy(fm_prompt_corr=0.99)  # no Whisper values: the audio flags alone
    finalise(audio_only)
    assert audio_only["failures"] == "prompt_copy"


def wilson_by_hand(k: int, n: int, confidence: float) -> tuple[float, float]:
    z = norm.ppf(0.5 + confidence / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_failure_rates_with_wilson_intervals():
    rows = ([{"fail": 1.0, "failures": "silent"}] * 3 + [{"fail": 1.0, "failures": "looping;babble"}] * 2
            + [{"fail": 0.0, "failures": ""}] * 15 + [{"wer": 0.1}, {"fail": None}])  # the last two: no verdict
    out = rates.failure_rates(rows)
    assert (out["n"], out["failed"], out["rate"]) == (20, 5, 0.25)
    assert set(out["flags"]) == set(FLAGS) and out["ci_method"] == "Wilson score interval, 95%"
    assert out["flags"]["silent"]["count"] == 3 and out["flags"]["looping"]["count"] == 2
    assert out["flags"]["babble"]["rate"] == 0.1 and out["flags"]["clipping"]["count"] == 0
    for (count, ci) in [(5, out["ci"]), (3, out["flags"]["silent"]["ci"]), (0, out["flags"]["clipping"]["ci"])]:
        scipy_ci = binomtest(count, 20).proportion_ci(confidence_level=0.95, method="wilson")
        assert ci == [round(scipy_ci.low, 6), round(scipy_ci.high, 6)]
        assert ci == pytest.approx(wilson_by_hand(count, 20, 0.95), abs=1e-6)
    assert out["flags"]["clipping"]["ci"][0] == 0.0 and out["flags"]["clipping"]["ci"][1] > 0.1  # not [0, 0]
    ninety = rates.failure_rates(rows, confidence=0.9)
    assert ninety["ci"] == pytest.approx(wilson_by_hand(5, 20, 0.9), abs=1e-6)
    assert ninety["ci"][1] - ninety["ci"][0] < out["ci"][1] - out["ci"][0]
    assert rates.failure_rates([{"wer": 0.1}]) is None and rates.failure_rates([]) is None
    assert rates.wilson(0, 0, 0.95) is None


PROMPT_TEXT = "Please remember to water the tomato plants every evening."  # 48 letters


def test_expected_duration_from_the_prompt_or_the_language():
    target = "After dinner we sat on the porch."  # 26 letters
    assert spoken_characters(target) == 26 and spoken_characters(PROMPT_TEXT) == 48
    speech = Speech(4.0, ((0.2, 1.0), (1.2, 3.7)))  # a span of 3.5 s: 13.7 characters per second
    got = expected_duration(target, "en", PROMPT_TEXT, "en", speech)
    assert got.source == "prompt" and got.seconds == pytest.approx(26 / (48 / 3.5))
    assert expected_duration(target, "en-US", PROMPT_TEXT, "", speech).source == "prompt"  # prompt's language unset
    slow = expected_duration(target, "en", PROMPT_TEXT, "en", Speech(8.0, ((0.0, 7.0),)))
    assert slow.seconds == pytest.approx(2 * got.seconds)  # a slower speaker: longer expected
    for language, prompt_text, prompt_language, prompt_speech in [
            ("en", PROMPT_TEXT, "fr", speech),  # the prompt in another language: its rate does not carry over
            ("en", "", "en", speech),  # no transcript
            ("en", "...", "en", speech),  # nothing spoken in it
            ("en", PROMPT_TEXT, "en", None),  # no prompt audio
            ("en", PROMPT_TEXT, "en", Speech(1.0, ((0.2, 0.7),))),  # too little speech to measure a rate (0.5 s)
            ("en", PROMPT_TEXT, "en", Speech(1.0, ()))]:
        default = expected_duration(target, language, prompt_text, prompt_language, prompt_speech)
        assert default.source == "language default" and default.seconds == pytest.approx(26 / DEFAULT_RATES["en"])
    zh = expected_duration("今天天气很好。", "zh", PROMPT_TEXT, "en", speech)
    assert zh.source == "language default" and zh.seconds == pytest.approx(6 / DEFAULT_RATES["zh"])
    unknown = expected_duration(target, "xx", PROMPT_TEXT, "en", speech)
    assert unknown.seconds is None and unknown.source == "none"
    assert audio_flags(healthy(fm_expected_s=unknown.seconds, fm_span_s=30.0)) == {}


def test_clipped_share():
    samples = np.zeros(10_000)
    samples[:10] = 1.0
    samples[10:15] = -0.999
    samples[15:40] = 0.9989  # below full scale
    assert clipped_share(samples) == pytest.approx(15 / 10_000)
    assert clipped_share(np.stack([samples, np.zeros(10_000)], axis=1)) == pytest.approx(15 / 20_000)  # every channel
    assert clipped_share(np.zeros(0)) == 0.0
    assert clipped_share(np.zeros(1000)) == 0.0


def speechlike(seconds: float, seed: int, rate: int = 16_000) -> np.ndarray:
    """Band-limited (below 4 kHz), amplitude-modulated noise."""
    rng = np.random.default_rng(seed)
    noise = resample_poly(rng.standard_normal(int(seconds * rate / 4)), 4, 1)[:int(seconds * rate)]
    t = np.arange(len(noise)) / rate
    return 0.3 * noise * (0.6 + 0.4 * np.sin(2 * np.pi * 4 * t))


def test_copy_correlation_on_synthetic_signals():
    a = speechlike(2.0, 1)
    assert copy_correlation(a, 16_000, a, 16_000) == pytest.approx(1.0)
    assert copy_correlation(-0.5 * a, 16_000, a, 16_000) == pytest.approx(1.0)  # gain, inverted polarity
    delayed = np.concatenate([np.zeros(800), a])[:len(a)]  # 50 ms later
    assert copy_correlation(delayed, 16_000, a, 16_000) > 0.95
    far = np.concatenate([np.zeros(4800), a])[:len(a)]  # 300 ms: beyond the 0.2 s window
    assert copy_correlation(far, 16_000, a, 16_000) < 0.2
    noisy = a + np.random.default_rng(2).normal(0, 0.02, len(a))  # about 20 dB SNR
    assert copy_correlation(noisy, 16_000, a, 16_000) > 0.95
    assert copy_correlation(resample_poly(a, 441, 320), 22_050, a, 16_000) > 0.99  # resampled
    assert copy_correlation(np.stack([a, a], axis=1), 16_000, a, 16_000) == pytest.approx(1.0)  # stereo
    assert copy_correlation(speechlike(2.0, 3), 16_000, a, 16_000) < 0.2  # another signal
    assert copy_correlation(np.zeros(len(a)), 16_000, a, 16_000) == 0.0


def test_importing_the_vad_keeps_torchs_thread_count():
    """silero_vad's package import sets torch to one thread; SileroVad puts the count back (fresh interpreters)."""
    bare = ("import torch; torch.set_num_threads(3); import silero_vad; print(torch.get_num_threads())")
    guarded = ("import torch; torch.set_num_threads(3); from clonebench.failures.vad import SileroVad; "
               "SileroVad(); import silero_vad; print(torch.get_num_threads())")
    for code, threads in [(bare, "1"), (guarded, "3")]:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split()[-1] == threads, code


# The failure scorer's audio path on the crafted clips and real speech: Silero VAD and the measures, no Whisper.

needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed "
                                  "(bash scripts/setup.sh: apt-get install espeak-ng)")


@pytest.fixture(scope="module")
def failure_scorer():
    """The scorer at the process's torch thread count: its VAD is a one-thread onnxruntime session, so it does not
    wait on torch's thread barriers (the JIT model took minutes on two busy threads)."""
    from clonebench.core.hashing import HashCache
    from clonebench.evaluate.scorers.failures import FailureScorer

    scorer = FailureScorer({}, "cpu", HashCache(None))
    try:
        scorer.load()
        yield scorer
    finally:
        scorer.release()


def prompted_item(wav, text, prompt, prompt_text, language="en"):
    from clonebench.core.hashing import sha256_file
    from clonebench.evaluate.protocols.base import ScoreItem

    return ScoreItem(sample_id=wav.stem, pair_id=wav.stem, speaker_id="s", generated_path=wav,
                     generated_sha256=sha256_file(wav), target_path=None, target_sha256="", target_text=text,
                     language=language, prompt_path=prompt, prompt_sha256=sha256_file(prompt), prompt_text=prompt_text,
                     prompt_language=language)


@needs_espeak
def test_crafted_cases_raise_their_audio_flags(crafted_cases, failure_scorer):
    cases = list(crafted_cases.values())
    records = failure_scorer.score_batch([prompted_item(c.wav, c.target_text, c.prompt_wav, c.prompt_text)
                                          for c in cases])
    for case, record in zip(cases, records):
        assert record.ok and record.sample_id == case.wav.stem
        raised = set(audio_flags(record.values))
        assert raised <= AUDIO_FLAGS
        assert case.expected & AUDIO_FLAGS <= raised, (case.name, raised, record.values)
        assert not case.forbidden & raised, (case.name, raised, record.values)
        assert record.values["fail"] == (1.0 if raised else 0.0)
        assert record.values["fm_expected_from"] == "prompt"
    by_name = {case.name: record.values for case, record in zip(cases, records)}
    assert not audio_flags(by_name["clean_en"]) and not audio_flags(by_name["french"])  # ASR flags only
    assert by_name["white_noise"]["fm_speech_s"] == 0.0  # noise is not speech to Silero
    assert by_name["prompt_as_is"]["fm_prompt_corr"] == 1.0 and by_name["clean_en"]["fm_prompt_corr"] < 0.2


def test_librivox_speech_raises_no_audio_flag(failure_scorer):
    """Real read speech, each clip scored as a clone of its own text with the next clip as the prompt."""
    from tests.crafted_failures import librivox_clips

    clips = librivox_clips()
    if not clips:
        pytest.fail("pocketsphinx-testdata is missing: run `bash scripts/setup.sh` (apt-get install "
                    "pocketsphinx-testdata)")
    items = [prompted_item(wav, text, *clips[(k + 1) % len(clips)]) for k, (wav, text) in enumerate(clips)]
    for item, record in zip(items, failure_scorer.score_batch(items)):
        values = record.values
        assert record.ok and audio_flags(values) == {}, (item.sample_id, values)
        assert values["fm_expected_from"] == "prompt"
        assert DEFAULT.truncated_ratio + 0.1 < values["fm_span_s"] / values["fm_expected_s"] < DEFAULT.overlong_ratio - 0.3
        assert values["fm_repeat_s"] <= DEFAULT.repeat_s / 4 and values["fm_speech_ratio"] >= 0.8
        assert max(values["fm_lead_s"], values["fm_trail_s"]) <= 0.5 and values["fm_prompt_corr"] < 0.5


def test_the_docs_page_states_every_flag_threshold_and_default_rate():
    """docs/failure-modes.md has a row per flag and per threshold with its current value, and the default rates."""
    import dataclasses

    from tests.conftest import REPO

    page = (REPO / "docs" / "failure-modes.md").read_text()
    for flag in FLAGS:
        assert f"| `{flag}` |" in page, flag
    for field in dataclasses.fields(Thresholds):
        value = getattr(DEFAULT, field.name)
        assert any(f"| `{field.name}` | {shown} |" in page for shown in (f"{value:g}", repr(value))), field.name
    assert "| language | " + " | ".join(DEFAULT_RATES) + " |" in page
    assert "| characters / s | " + " | ".join(f"{r:.1f}" for r in DEFAULT_RATES.values()) + " |" in page
