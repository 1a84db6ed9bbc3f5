"""The verdict per utterance: which failure flags a clip raises, each with its measured value and threshold.

``audio_flags`` reads the failure scorer's measurements (``fm_*``), ``asr_flags`` the Whisper scorer's values of
the same clip (``hypothesis``, ``wer``/``cer``, ``asr_*``: the transcript against the text, and the text's
teacher-forced log-probability ``asr_text_logprob``, a view of the audio that does not depend on what Whisper
decoded or how sure it was of it). ``finalise`` puts both into a result row: ``fail``
(1.0 when any flag is raised, else 0.0: its mean is the failure rate), ``failures`` (the flags, ``;``-separated)
and ``failure_detail`` (each flag's measured value against its threshold). A silent clip says nothing about its
text or language: babble and wrong_language are not raised on one.
"""

from __future__ import annotations

from clonebench.core.cells import strict_number
from clonebench.failures.text import coverage, repeat_excess, same_language, unmatched_share
from clonebench.failures.thresholds import DEFAULT, FLAGS, Thresholds


def _number(row: dict, key: str) -> float | None:
    return strict_number(row.get(key))


def audio_flags(values: dict, t: Thresholds = DEFAULT) -> dict[str, str]:
    """flag -> detail, from the ``fm_*`` measurements."""
    out: dict[str, str] = {}
    speech, ratio = _number(values, "fm_speech_s") or 0.0, _number(values, "fm_speech_ratio") or 0.0
    lead, trail = _number(values, "fm_lead_s") or 0.0, _number(values, "fm_trail_s") or 0.0
    if speech < t.silent_speech_s:
        out["silent"] = f"speech {speech:.2f} s < {t.silent_speech_s:g} s"
    elif ratio < t.mostly_silent_ratio or max(lead, trail) > t.edge_silence_s:
        out["mostly_silent"] = (f"speech share {ratio:.2f} (< {t.mostly_silent_ratio:g}), leading {lead:.1f} s, "
                                f"trailing {trail:.1f} s (> {t.edge_silence_s:g} s)")
    expected, span = _number(values, "fm_expected_s"), _number(values, "fm_span_s") or 0.0
    if "silent" not in out and expected is not None and expected >= t.min_expected_s:
        ratio = span / expected
        source = values.get("fm_expected_from") or ""
        pace = _number(values, "fm_rate_ratio")
        if ratio < t.truncated_ratio:
            out["truncated"] = f"spoken {span:.2f} s = {ratio:.2f} x the {expected:.2f} s expected ({source}) " \
                               f"< {t.truncated_ratio:g}"
        elif pace is not None and ratio * pace < t.truncated_rate_ratio:
            out["truncated"] = f"spoken {span:.2f} s = {ratio:.2f} x the {expected:.2f} s expected ({source}), " \
                               f"x {pace:.2f} (the clip's syllable rate / the prompt's) = {ratio * pace:.2f} " \
                               f"< {t.truncated_rate_ratio:g}"
        elif ratio > t.overlong_ratio:
            out["overlong"] = f"spoken {span:.2f} s = {ratio:.2f} x the {expected:.2f} s expected ({source}) " \
                              f"> {t.overlong_ratio:g}"
    repeat = _number(values, "fm_repeat_s") or 0.0
    if repeat >= t.repeat_s:
        out["looping"] = f"{repeat:.2f} s of audio repeated (>= {t.repeat_s:g} s)"
    clipped = _number(values, "fm_clipped_share") or 0.0
    if clipped >= t.clipped_share:
        out["clipping"] = f"{clipped:.2%} of samples at full scale (>= {t.clipped_share:.1%})"
    corr = _number(values, "fm_prompt_corr")
    if corr is not None and corr >= t.copy_correlation:
        out["prompt_copy"] = f"waveform correlation with the prompt {corr:.3f} (>= {t.copy_correlation:g})"
    return out


def _babble(row: dict, unmatched: float, text_logprob: float | None, t: Thresholds) -> str | None:
    """Two views that must agree: the audio does not support the text (its teacher-forced log-probability) and
    the transcript is mostly other words. Without the forced view (openai-whisper, clips over 30 s): the WER with
    Whisper unsure, failure_modes_v1's rule."""
    if text_logprob is not None:
        if text_logprob <= t.text_logprob and unmatched >= t.babble_unmatched:
            return (f"the text's forced log-prob {text_logprob:.2f} per token (<= {t.text_logprob:g}), "
                    f"{unmatched:.0%} of the transcript other words (>= {t.babble_unmatched:.0%})")
        return None
    error = _number(row, "cer" if row.get("text_rule") == "zh_jieba" else "wer")
    logprob, no_speech = _number(row, "asr_logprob"), _number(row, "asr_no_speech")
    unsure = (logprob is None or logprob <= t.babble_logprob) or (no_speech is not None and
                                                                   no_speech >= t.babble_no_speech)
    if error is not None and error >= t.babble_error and unsure:
        return (f"error rate {error:.2f} (>= {t.babble_error:g}) with avg log-prob "
                f"{'none' if logprob is None else f'{logprob:.2f}'}, no-speech "
                f"{'none' if no_speech is None else f'{no_speech:.2f}'}")
    return None


def _wrong_language(row: dict, language: str, text_logprob: float | None, t: Thresholds) -> str | None:
    """Another language, by either of two routes: Whisper's language identification is sure of it (the heard
    language at >= language_confident, the text's at <= target_language_probability), or it leans to it (the
    text's at <= target_language_max) and the audio does not support the text (its forced log-probability). An
    accent that Whisper takes for another language at low confidence still says the text: no flag."""
    heard, target = row.get("asr_language"), _number(row, "asr_target_prob")
    if not heard or target is None or same_language(str(heard), language):
        return None
    confidence = _number(row, "asr_language_prob") or 0.0
    said = f"Whisper hears {heard} (p={confidence:.2f}), the text's {language} p={target:.3f}"
    if confidence >= t.language_confident and target <= t.target_language_probability:
        return f"{said} (>= {t.language_confident:g}, <= {t.target_language_probability:g})"
    if text_logprob is not None and target <= t.target_language_max and text_logprob <= t.text_logprob:
        return f"{said} (<= {t.target_language_max:g}), the text's forced log-prob {text_logprob:.2f} per " \
               f"token (<= {t.text_logprob:g})"
    return None


def asr_flags(row: dict, silent: bool, t: Thresholds = DEFAULT) -> dict[str, str]:
    """flag -> detail, from the Whisper values of the row (none when it has none)."""
    out: dict[str, str] = {}
    hypothesis, reference = row.get("hypothesis"), row.get("target_text") or ""
    if hypothesis is None:
        return out
    hypothesis = str(hypothesis)
    language = str(row.get("language") or "").strip().lower().split("-")[0].split("_")[0]
    if not row.get("asr_language") and language not in ("", "en"):
        return out  # an English-only model (it identifies no language) cannot judge another language's text
    extra, excess = repeat_excess(hypothesis, reference, language, t.ngram)
    if extra >= t.min_repeats and excess >= t.repeat_excess:
        out["looping"] = f"{extra} repeated n-grams beyond the text's ({excess:.2f} per n-gram >= {t.repeat_excess:g})"
    if silent:
        return out
    unmatched, covered = unmatched_share(hypothesis, reference, language), coverage(hypothesis, reference, language)
    reach, said = covered if covered else (1.0, 1.0)
    expected = _number(row, "fm_expected_s")
    text_logprob = _number(row, "asr_text_logprob")
    if reach < t.truncated_coverage and said >= t.truncated_said and unmatched < t.truncated_unmatched \
            and text_logprob is not None and text_logprob <= t.truncated_text_logprob \
            and expected is not None and expected >= t.min_expected_s:
        out["truncated"] = (f"the transcript ends {reach:.0%} into the text (< {t.truncated_coverage:.0%}) "
                            f"saying {said:.0%} of it up to there, {unmatched:.0%} of it other words, the text's "
                            f"forced log-prob {text_logprob:.2f} (<= {t.truncated_text_logprob:g})")
    for flag, detail in (("babble", _babble(row, unmatched, text_logprob, t)),
                         ("wrong_language", _wrong_language(row, language, text_logprob, t))):
        if detail:
            out[flag] = detail
    return out


def finalise(row: dict, t: Thresholds = DEFAULT) -> None:
    """Set ``fail``, ``failures`` and ``failure_detail`` of a row that has the failure scorer's measurements."""
    if row.get("fm_speech_s") is None:
        return
    found = audio_flags(row, t)
    for flag, detail in asr_flags(row, "silent" in found, t).items():
        found[flag] = f"{found[flag]}; {detail}" if flag in found else detail
    ordered = [f for f in FLAGS if f in found]
    row["fail"] = 1.0 if ordered else 0.0
    row["failures"] = ";".join(ordered)
    row["failure_detail"] = " | ".join(f"{f}: {found[f]}" for f in ordered)
