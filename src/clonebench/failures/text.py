"""What the ASR result says about a clip: repeated n-grams beyond the text's own, how much of the transcript is
the text and how far into the text it gets, and the language Whisper hears.

Words are the lower-cased runs of letters, digits and apostrophes; a Chinese or Japanese text (or a hypothesis in
those scripts) is compared by characters, with n-grams twice as long (a character is about a syllable).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from difflib import SequenceMatcher

WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
CHARACTER_LANGUAGES = ("zh", "ja", "yue")


def _cjk(text: str) -> bool:
    return any("CJK" in unicodedata.name(ch, "") or "HIRAGANA" in unicodedata.name(ch, "")
               or "KATAKANA" in unicodedata.name(ch, "") for ch in text)


def by_characters(language: str, *texts: str) -> bool:
    return language in CHARACTER_LANGUAGES or any(_cjk(t) for t in texts)


def tokens(text: str, characters: bool) -> list[str]:
    if characters:
        return [ch for ch in text.lower() if unicodedata.category(ch)[0] in "LN"]
    return WORD.findall(text.lower())


def repeats(items: list[str], n: int) -> int:
    """n-gram occurrences beyond the first of each distinct n-gram."""
    grams = Counter(tuple(items[i:i + n]) for i in range(len(items) - n + 1))
    return sum(count - 1 for count in grams.values())


def repeat_excess(hypothesis: str, reference: str, language: str, n: int) -> tuple[int, float]:
    """(extra repeated n-grams in ``hypothesis`` beyond those of ``reference``, that number per n-gram of the
    reference). ``n`` words, or 2n characters for character languages."""
    characters = by_characters(language, reference, hypothesis)
    size = 2 * n if characters else n
    hyp, ref = tokens(hypothesis, characters), tokens(reference, characters)
    extra = max(0, repeats(hyp, size) - repeats(ref, size))
    return extra, extra / max(1, len(ref) - size + 1)


def matched(hypothesis: str, reference: str, language: str) -> tuple[int, int, int, int]:
    """(tokens of the hypothesis, tokens of the reference, tokens in common in order, how far into the reference
    the last common token is): words, or characters for character languages, aligned by difflib's longest
    matching blocks (the same in-order matching a WER alignment makes, without its edit costs)."""
    characters = by_characters(language, reference, hypothesis)
    hyp, ref = tokens(hypothesis, characters), tokens(reference, characters)
    blocks = [b for b in SequenceMatcher(None, ref, hyp, autojunk=False).get_matching_blocks() if b.size]
    common = sum(b.size for b in blocks)
    reach = max((b.a + b.size for b in blocks), default=0)
    return len(hyp), len(ref), common, reach


def unmatched_share(hypothesis: str, reference: str, language: str) -> float:
    """The share of the transcript's tokens that are not the text's (1.0 for an empty transcript): what the clip
    says instead of the text. A clip cut short says little but all of it the text's (low); babble, high."""
    n_hyp, _, common, _ = matched(hypothesis, reference, language)
    return 1.0 - common / n_hyp if n_hyp else 1.0


def coverage(hypothesis: str, reference: str, language: str) -> tuple[float, float] | None:
    """How far into the text the transcript gets (the share of the text's tokens up to the last one the
    transcript says) and how much of the text up to there it says (None for an empty text)."""
    _, n_ref, common, reach = matched(hypothesis, reference, language)
    return (reach / n_ref, common / reach if reach else 0.0) if n_ref else None


def same_language(heard: str, expected: str) -> bool:
    """Whisper's code against the task's: 'zh' also covers Cantonese ('yue'), and Norwegian's two codes match."""
    groups = ({"zh", "yue"}, {"no", "nn", "nb"})
    if heard == expected:
        return True
    return any(heard in g and expected in g for g in groups)
