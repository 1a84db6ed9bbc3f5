"""Which scores count: a NaN/inf or out-of-range value, or a clip too short for its scorer, is a per-sample metric
error with a reason (never averaged, never cached); the run is then ``partial`` with that reason."""

from __future__ import annotations

import math
from pathlib import Path

from clonebench.evaluate.base import Scorer, ScoreItem, ScoreRecord

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
}


def invalid_value(values: dict) -> str | None:
    """The first value that is not a usable score, described; None when all are."""
    for metric, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not math.isfinite(value):
            return f"{metric}={value} is not finite"
        low, high = RANGES.get(metric, (-math.inf, math.inf))
        if not low <= value <= high:
            return f"{metric}={value} is outside [{low:g}, {high:g}]"
    if "sva" in values and values["sva"] not in (0.0, 1.0):
        return f"sva={values['sva']} is not 0 or 1"
    return None


def checked(scorer_name: str, record: ScoreRecord) -> ScoreRecord:
    """``record``, or an error record naming the invalid value."""
    if not record.ok:
        return record
    problem = invalid_value(record.values)
    if problem is None:
        return record
    return ScoreRecord(record.sample_id, error=f"invalid score from {scorer_name}: {problem}")


def _seconds(path: Path) -> float:
    import soundfile as sf

    info = sf.info(str(path))
    return info.frames / info.samplerate


def too_short(scorer: Scorer, item: ScoreItem) -> ScoreRecord | None:
    """An error record when a clip the scorer reads is shorter than ``scorer.min_duration_s``; else None."""
    if scorer.min_duration_s <= 0:
        return None
    clips = [("generated", item.generated_path)]
    if scorer.needs_reference and item.target_path is not None:
        clips.append(("target", Path(item.target_path)))
    for role, path in clips:
        try:
            seconds = _seconds(path)
        except Exception:  # unreadable: the scorer reports its own error
            continue
        if seconds < scorer.min_duration_s:
            return ScoreRecord(item.sample_id, error=(
                f"{role} audio is {seconds:.4f} s, shorter than the {scorer.min_duration_s:g} s that the "
                f"{scorer.name} scorer can use ({path})"))
    return None
