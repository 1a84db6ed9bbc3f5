"""Which scores count: a NaN/inf or out-of-range value, or a clip too short for its scorer, is a per-sample metric
error with a reason (never averaged, never cached); the run is then ``partial`` with that reason.

``record_problem`` applies the same rules, plus the shape of each scorer group's values (``RECORD_VALUES``), to
a record read back from the metric cache: a record that breaks any of them is not trusted (evaluate/execution/cache.py)."""

from __future__ import annotations

import math
from pathlib import Path

from clonebench.evaluate.protocols.base import ScoreItem, Scorer, ScoreRecord

COSINE_SLACK = 1e-6  # float rounding of a cosine of identical vectors
# metric -> (lowest, highest) allowed; every other numeric value must only be finite
RANGES: dict[str, tuple[float, float]] = {
    "sim": (-1.0 - COSINE_SLACK, 1.0 + COSINE_SLACK),
    "sva": (0.0, 1.0),
    "wer": (0.0, math.inf),
    "wer_edits": (0.0, math.inf),
    "wer_ref_words": (0.0, math.inf),
    "cer": (0.0, math.inf),
    "cer_edits": (0.0, math.inf),
    "cer_ref_chars": (0.0, math.inf),
    "mcd": (0.0, math.inf),
    "stoi": (-1.0, 1.0),
    "emotion_match": (0.0, 1.0),
    "fail": (0.0, 1.0),
    "fm_speech_ratio": (0.0, 1.0),
    "fm_clipped_share": (0.0, 1.0),
    "fm_prompt_corr": (0.0, 1.0 + COSINE_SLACK),
    "seed_sim": (-1.0 - COSINE_SLACK, 1.0 + COSINE_SLACK),
    **{f"seed_wer_{lang}{part}": (0.0, math.inf) for lang in ("en", "zh") for part in ("", "_sub", "_del", "_ins")},
    "asr_no_speech": (0.0, 1.0),
    "asr_language_prob": (0.0, 1.0),
    "asr_target_prob": (0.0, 1.0),
    "asr_text_logprob": (-math.inf, 0.0),
}
BINARY = ("sva", "emotion_match", "fail")  # 0 or 1

# The values each scorer group records, by kind: the metric cache trusts a stored record only when its values
# are exactly these keys, each of its kind (and, for numbers, finite and within RANGES).
NUMBER, COUNT, TEXT = "a finite number", "a non-negative integer", "a string"
MAYBE_NUMBER = "a finite number or null"  # null: not measured (no prompt, no rate known, no language identified)
ASR_VALUES = {"asr_logprob": MAYBE_NUMBER, "asr_no_speech": MAYBE_NUMBER, "asr_language": TEXT,
              "asr_language_prob": MAYBE_NUMBER, "asr_target_prob": MAYBE_NUMBER,
              "asr_text_logprob": MAYBE_NUMBER}
RECORD_VALUES: dict[str, dict[str, str]] = {
    "ecapa": {"sim": NUMBER, "sva": NUMBER},
    "whisper": {"hypothesis": TEXT, "text_rule": TEXT,
                "wer": NUMBER, "wer_ref_words": COUNT, "wer_substitutions": COUNT, "wer_deletions": COUNT,
                "wer_insertions": COUNT, "wer_edits": COUNT,
                "cer": NUMBER, "cer_ref_chars": COUNT, "cer_substitutions": COUNT, "cer_deletions": COUNT,
                "cer_insertions": COUNT, "cer_edits": COUNT, **ASR_VALUES},
    "mcd": {"mcd": NUMBER},
    "dnsmos": {"dnsmos": NUMBER, "dnsmos_sig": NUMBER, "dnsmos_bak": NUMBER, "dnsmos_p808": NUMBER},
    "stoi": {"stoi": NUMBER},
    "utmos": {"mos": NUMBER},
    "emotion": {"emotion_match": NUMBER, "emotion_target": TEXT, "emotion_generated": TEXT},
    "failures": {"fail": NUMBER, "fm_duration_s": NUMBER, "fm_speech_s": NUMBER, "fm_speech_ratio": NUMBER,
                 "fm_lead_s": NUMBER, "fm_trail_s": NUMBER, "fm_span_s": NUMBER, "fm_expected_s": MAYBE_NUMBER,
                 "fm_expected_from": TEXT, "fm_repeat_s": NUMBER, "fm_clipped_share": NUMBER,
                 "fm_prompt_corr": MAYBE_NUMBER, "fm_rate_ratio": MAYBE_NUMBER},
    "seedtts_sim": {"seed_sim": NUMBER},
    **{f"seedtts_{asr}": {f"seed_wer_{lang}": NUMBER, f"seed_wer_{lang}_sub": NUMBER, f"seed_wer_{lang}_del": NUMBER,
                          f"seed_wer_{lang}_ins": NUMBER, f"seed_hypothesis_{lang}": TEXT}
       for asr, lang in (("whisper", "en"), ("paraformer", "zh"))},
}


def invalid_value(values: dict) -> str | None:
    """The first value that is not a usable score, described; None when all are."""
    for metric, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        try:
            finite = math.isfinite(value)
        except OverflowError:  # an integer no float can hold (e.g. 10**400 read back from a JSON file)
            finite = False
        if not finite:
            return f"{metric}={value:.6g} is not finite" if isinstance(value, float) else f"{metric} is not finite"
        low, high = RANGES.get(metric, (-math.inf, math.inf))
        if not low <= value <= high:
            return f"{metric}={value} is outside [{low:g}, {high:g}]"
    for metric in BINARY:
        if metric in values and values[metric] not in (0.0, 1.0):
            return f"{metric}={values[metric]} is not 0 or 1"
    return None


def _kind_problem(name: str, value, kind: str) -> str | None:
    if kind == TEXT:
        return None if isinstance(value, str) else f"{name} is not {kind}"
    if kind == MAYBE_NUMBER and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{name} is not {kind}"
    if kind == COUNT and (not isinstance(value, int) or value < 0):
        return f"{name}={value!r} is not {kind}"
    return None


def record_problem(group: str, metrics: tuple[str, ...], values) -> str | None:
    """Why ``values`` (read back from the metric cache for scorer ``group``, which yields ``metrics``) cannot be
    trusted, or None. A group missing from RECORD_VALUES needs every metric, each a number or a string."""
    if not isinstance(values, dict) or not all(isinstance(k, str) for k in values):
        return "values are not a mapping of names to scores"
    expected = RECORD_VALUES.get(group)
    extra = []
    if expected is None:  # a scorer without a declared shape: its metrics, and numbers or strings only
        expected = {m: TEXT if isinstance(values.get(m), str) else NUMBER for m in (*metrics, *values)}
    else:
        extra = sorted(set(values) - set(expected))
    missing = sorted(set(expected) - set(values))
    if missing or extra:
        return "values " + "; ".join(filter(None, [missing and f"lack {missing}", extra and f"have unexpected {extra}"]))
    for name, kind in expected.items():
        problem = _kind_problem(name, values[name], kind)
        if problem:
            return problem
    return invalid_value(values)


def checked(scorer_name: str, record: ScoreRecord) -> ScoreRecord:
    """``record``, or an error record naming the invalid value."""
    if not record.ok:
        return record
    problem = invalid_value(record.values)
    if problem is None:
        return record
    return ScoreRecord(record.sample_id, error=f"invalid score from {scorer_name}: {problem}")


SILENT_PEAK_DBFS = -60.0  # a clip whose every sample is below this has no sound any scorer could measure


def _clip_problem(path: Path, scorer: Scorer) -> str | None:
    """Why the clip at ``path`` cannot be scored by ``scorer`` (empty, too short, silent), or None."""
    import numpy as np
    import soundfile as sf

    try:
        info = sf.info(str(path))
    except Exception:  # unreadable: the scorer reports its own error
        return None
    seconds = info.frames / info.samplerate
    if info.frames == 0 and not scorer.scores_silence:
        return "is empty (0 samples)"
    if seconds < scorer.min_duration_s:
        return f"is {seconds:.4f} s, shorter than the {scorer.min_duration_s:g} s that the {scorer.name} scorer can use"
    if scorer.scores_silence:
        return None
    limit, peak = 10 ** (SILENT_PEAK_DBFS / 20), 0.0
    for block in sf.blocks(str(path), blocksize=1 << 16, dtype="float32"):
        peak = max(peak, float(np.max(np.abs(block))) if block.size else 0.0)
        if peak > limit:
            return None  # sound: usually found in the first block, so a long clip is not read through
    shown = f"{20 * np.log10(peak):.1f} dBFS" if peak > 0 else "0"
    return f"is silent (peak {shown}, at or below {SILENT_PEAK_DBFS:g} dBFS)"


def too_short(scorer: Scorer, item: ScoreItem) -> ScoreRecord | None:
    """An error record when a clip the scorer reads is empty, silent (unless the scorer measures silence: the
    failure detector) or shorter than ``scorer.min_duration_s``; else None. An empty or silent clip has no
    speaker, words or spectrum to measure: a number for it (an MCD of 16.5 for no audio) would be averaged as a
    real score."""
    clips = [("generated", item.generated_path)]
    if scorer.needs_reference and item.target_path is not None:
        clips.append(("target", Path(item.target_path)))
    for role, path in clips:
        problem = _clip_problem(Path(path), scorer)
        if problem is not None:
            return ScoreRecord(item.sample_id, error=f"{role} audio {problem} ({path})")
    return None
