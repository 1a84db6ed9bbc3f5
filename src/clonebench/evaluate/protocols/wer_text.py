"""Text normalisations of languages other than Chinese, and error rates with exact edit counts (jiwer).

Upstream (rvcbench 2.2.1 ``WERScorer``) applies its normalisation (``ascii_punctuation_removed_v2`` or
``lowercase_v1``) to every text that does not take the Chinese branch (``transcript.py``), French included:
so do these two. ``whisper_english_v1`` (clonebench's own, not upstream's) is English-only: a pair in another
language gets Whisper's ``BasicTextNormalizer`` (Whisper's rule for non-English text) instead.
"""

from __future__ import annotations

import string
from functools import lru_cache

import jiwer

_PUNCTUATION = str.maketrans("", "", string.punctuation)


@lru_cache(maxsize=1)
def _whisper_english():
    from whisper.normalizers import EnglishTextNormalizer

    return EnglishTextNormalizer()


@lru_cache(maxsize=1)
def _whisper_basic():
    from whisper.normalizers import BasicTextNormalizer

    return BasicTextNormalizer()


NORMALISATIONS = {
    # the historical protocol: delete every character of Python's string.punctuation (so "ill-disposed"
    # becomes one word), then lower-case; numbers are NOT normalised
    "ascii_punctuation_removed_v2": lambda text: text.translate(_PUNCTUATION).lower(),
    "lowercase_v1": lambda text: text.lower(),
    # openai-whisper's EnglishTextNormalizer (the normaliser of Whisper's own WER figures): spellings,
    # numbers, contractions, "Mr." -> "mister", hyphens -> spaces; English only
    "whisper_english_v1": lambda text: _whisper_english()(text),
}


def normalise(text: str, name: str, language: str = "en") -> str:
    """``text`` under the normalisation ``name`` for a pair in ``language`` (Whisper's code: 'en', 'fr')."""
    if name == "whisper_english_v1" and language != "en":
        return _whisper_basic()(text)
    return NORMALISATIONS[name](text)


def utterance_wer(reference: str, hypothesis: str, normalisation: str) -> dict:
    """``jiwer.wer(normalise(reference), normalise(hypothesis))`` plus its edit counts, so corpus WER is exact."""
    ref, hyp = normalise(reference, normalisation), normalise(hypothesis, normalisation)
    if not ref.split():
        raise ValueError(f"reference {reference!r} is empty after {normalisation}")
    return edit_counts(ref.split(), hyp.split(), "wer")


def edit_counts(reference: list[str], hypothesis: list[str], metric: str, unit: str = "words") -> dict:
    """jiwer's error rate of two token lists (words, or characters for CER) with its edit counts:
    ``{metric, metric_ref_<unit>, metric_substitutions, metric_deletions, metric_insertions, metric_edits}``."""
    if not reference:
        raise ValueError(f"{metric}: the reference has no token")
    if not hypothesis:  # jiwer refuses an empty hypothesis: every reference token is a deletion
        return {metric: 1.0, f"{metric}_ref_{unit}": len(reference), f"{metric}_substitutions": 0,
                f"{metric}_deletions": len(reference), f"{metric}_insertions": 0, f"{metric}_edits": len(reference)}
    out = jiwer.process_words(" ".join(reference), " ".join(hypothesis))
    edits = out.substitutions + out.deletions + out.insertions
    return {metric: float(out.wer), f"{metric}_ref_{unit}": len(reference), f"{metric}_substitutions": out.substitutions,
            f"{metric}_deletions": out.deletions, f"{metric}_insertions": out.insertions, f"{metric}_edits": edits}
