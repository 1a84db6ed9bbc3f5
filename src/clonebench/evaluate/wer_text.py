"""Text normalisations and per-utterance WER with exact edit counts (jiwer)."""

from __future__ import annotations

import string
from functools import lru_cache

import jiwer

_PUNCTUATION = str.maketrans("", "", string.punctuation)


@lru_cache(maxsize=1)
def _whisper_english():
    from whisper.normalizers import EnglishTextNormalizer

    return EnglishTextNormalizer()


NORMALISATIONS = {
    # the historical protocol: delete every character of Python's string.punctuation (so "ill-disposed"
    # becomes one word), then lower-case; numbers are NOT normalised
    "ascii_punctuation_removed_v2": lambda text: text.translate(_PUNCTUATION).lower(),
    "lowercase_v1": lambda text: text.lower(),
    # openai-whisper's EnglishTextNormalizer (the normaliser of Whisper's own WER figures): spellings,
    # numbers, contractions, "Mr." -> "mister", hyphens -> spaces; English only
    "whisper_english_v1": lambda text: _whisper_english()(text),
}


def normalise(text: str, name: str) -> str:
    return NORMALISATIONS[name](text)


def utterance_wer(reference: str, hypothesis: str, normalisation: str) -> dict:
    """``jiwer.wer(normalise(reference), normalise(hypothesis))`` plus its edit counts, so corpus WER is exact."""
    ref, hyp = normalise(reference, normalisation), normalise(hypothesis, normalisation)
    ref_words = len(ref.split())
    if ref_words == 0:
        raise ValueError(f"reference {reference!r} is empty after {normalisation}")
    if not hyp.strip():  # jiwer refuses an empty hypothesis: every reference word is a deletion
        return {"wer": 1.0, "wer_ref_words": ref_words, "wer_substitutions": 0, "wer_deletions": ref_words,
                "wer_insertions": 0, "wer_edits": ref_words}
    out = jiwer.process_words(ref, hyp)
    edits = out.substitutions + out.deletions + out.insertions
    return {"wer": float(out.wer), "wer_ref_words": ref_words, "wer_substitutions": out.substitutions,
            "wer_deletions": out.deletions, "wer_insertions": out.insertions, "wer_edits": edits}
