"""The failure flags, their thresholds and the reasons for them: one versioned protocol.

Every number here decides a flag, so all of them are in ``protocol()`` and hence in the failure scorer's
fingerprint: a changed threshold is a new protocol, never mixed with cached records of the old one. How each one
was chosen is in docs/failure-modes.md: on the dev half of the labelled set of bench/failure_set.py (real LibriVox
speech and eSpeak NG voices, every failure class in several variants), never on its held-out half, which is what
bench/failure_accuracy.py reports.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

VERSION = "failure_modes_v2"


@dataclass(frozen=True)
class Thresholds:
    silent_speech_s: float = 0.3        # less detected speech than this (seconds): silent
    mostly_silent_ratio: float = 0.4    # speech share of the clip below this: mostly_silent
    edge_silence_s: float = 2.0         # leading or trailing non-speech longer than this: mostly_silent
    truncated_ratio: float = 0.6        # spoken span / expected duration below this: truncated
    truncated_rate_ratio: float = 0.66  # or that ratio times the clip's syllable rate / the prompt's below this
    truncated_coverage: float = 0.8     # or the transcript stops before this share of the text's words ...
    truncated_said: float = 0.5         # ... says at least this share of the text's words up to there ...
    truncated_unmatched: float = 0.5    # ... less than this share of it is not the text's ...
    truncated_text_logprob: float = -1.9  # ... and the whole text's forced log-prob is at or below this
    overlong_ratio: float = 1.8         # spoken span / expected duration above this: overlong
    min_expected_s: float = 1.0         # duration checks only for texts expected to last at least this long
    repeat_s: float = 1.8               # the same audio (warped self-similarity) repeated over this long: looping
    repeat_similarity: float = 0.8      # cosine similarity of two MFCC frames that counts as "the same"
    ngram: int = 3                      # words (characters for Chinese/Japanese: 2 x ngram) per repeated n-gram
    repeat_excess: float = 0.5          # repeated n-grams beyond the text's own, per n-gram of the text: looping
    min_repeats: int = 2                # and at least this many extra repeats
    text_logprob: float = -2.75         # the target text's teacher-forced log-prob per token at or below this:
    #                                     the audio does not say the text (babble, wrong_language)
    babble_unmatched: float = 0.5       # babble: and at least this share of the transcript is not the text's
    language_confident: float = 0.4     # wrong_language: Whisper names another language at least this sure ...
    target_language_probability: float = 0.1  # ... and gives the task's language at most this; or
    target_language_max: float = 0.5    # it gives the task's at most this and the text is unlikely (text_logprob)
    # without the text's log-probability (openai-whisper, clips over 30 s): the rule of failure_modes_v1
    babble_error: float = 0.5           # WER (CER for character languages) at or above this ...
    babble_logprob: float = -1.4        # ... with Whisper's average log-probability at or below this
    babble_no_speech: float = 0.45      # ... or its no-speech probability at or above this: babble
    clipped_share: float = 0.001        # share of samples at full scale (|x| >= 0.999) at or above this: clipping
    copy_correlation: float = 0.95      # waveform correlation with the prompt (16 kHz, lag <= 0.2 s): prompt_copy
    copy_duration_tolerance: float = 0.05  # and durations within 5 %


DEFAULT = Thresholds()

# flag -> (what it means, what it is measured by): shown on hover in the HTML report and in docs/failure-modes.md
FLAGS: dict[str, tuple[str, str]] = {
    "silent": ("no speech in the clip (digital silence, noise or a tone)",
               "speech detected by Silero VAD shorter than {silent_speech_s:g} s"),
    "mostly_silent": ("the clip is mostly not speech, or has long silence before or after it",
                      "speech share < {mostly_silent_ratio:g}, or leading/trailing non-speech > {edge_silence_s:g} s"),
    "truncated": ("the clip stops before the text is said",
                  "spoken span < {truncated_ratio:g} x the duration expected from the text at the prompt's rate "
                  "(or < {truncated_rate_ratio:g} x once scaled by the clip's syllable rate against the prompt's), "
                  "or the transcript ends before {truncated_coverage:.0%} of the text's words having said "
                  ">= {truncated_said:.0%} of them, less than "
                  "{truncated_unmatched:.0%} of it other words, and the text's forced log-prob <= "
                  "{truncated_text_logprob:g}"),
    "overlong": ("the clip goes on far longer than the text needs",
                 "spoken span > {overlong_ratio:g} x the duration expected from the text at the prompt's rate"),
    "looping": ("a phrase is repeated (the model loops)",
                "the same audio repeated over >= {repeat_s:g} s (MFCC self-similarity >= {repeat_similarity:g} "
                "along a time-warped path), or repeated {ngram}-grams in the transcript beyond the text's own "
                ">= {repeat_excess:g} per n-gram"),
    "babble": ("speech-like sound that does not say the text",
               "the text's teacher-forced log-probability per token <= {text_logprob:g} and >= "
               "{babble_unmatched:.0%} of the transcript other words (without it: WER (CER) >= {babble_error:g} "
               "with Whisper's average log-probability <= {babble_logprob:g} or no-speech probability >= "
               "{babble_no_speech:g})"),
    "wrong_language": ("the text is spoken in another language",
                       "Whisper's language identification names another language at p >= {language_confident:g} "
                       "and the text's at p <= {target_language_probability:g}, or the text's at p <= "
                       "{target_language_max:g} with the text's teacher-forced log-probability per token <= "
                       "{text_logprob:g}"),
    "clipping": ("the waveform is clipped", "share of samples at full scale >= {clipped_share:g}"),
    "prompt_copy": ("the clip is the reference prompt itself (or a processed copy), not a clone",
                    "waveform correlation with the prompt >= {copy_correlation:g} at 16 kHz, durations within "
                    "{copy_duration_tolerance:.0%}"),
}
ASR_FLAGS = ("babble", "wrong_language")   # need the Whisper values; looping uses them when present


def describe(flag: str, thresholds: Thresholds = DEFAULT) -> str:
    """``meaning: rule`` of ``flag`` with the thresholds filled in (the HTML report's hover text)."""
    meaning, rule = FLAGS[flag]
    return f"{flag}: {meaning} ({rule.format(**dataclasses.asdict(thresholds))})"


def protocol(thresholds: Thresholds = DEFAULT) -> dict:
    return {"version": VERSION, "flags": list(FLAGS), "thresholds": dataclasses.asdict(thresholds)}
