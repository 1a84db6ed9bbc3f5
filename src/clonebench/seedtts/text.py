"""Seed-TTS-eval's WER text rule and per-utterance measures (``run_wer.py``'s ``process_one``), written anew.

The rule, as the benchmark applies it to the reference text and to the ASR transcript alike:

1. delete every character of ``zhon.hanzi.punctuation + string.punctuation`` except the ASCII apostrophe ``'``
   (full-width quotes, ``’``, ``…``, ``—``, the ideographic space U+3000 included: they are in zhon's set);
2. ``str.replace('  ', ' ')`` once: one left-to-right pass, so three spaces become two, four become two;
3. ``zh``: every remaining character (spaces included) joined by one space; ``en``: lower-cased;
4. edit counts from jiwer's default WER transform (collapse runs of 2+ whitespace characters to one space,
   strip, split on ' '): jiwer 3's ``compute_measures`` (what the benchmark calls) used exactly the transform that
   jiwer 4's ``process_words`` uses by default (``wer_default``: checked at import below), with the same
   alignment; jiwer 3 refuses an empty reference (raw, or no word left after the transform) with a ValueError,
   which jiwer 4 no longer does: this module raises as jiwer 3 did (the benchmark's run stops there; clonebench
   records the utterance's error);
5. ``wer`` = jiwer's WER; the substitution, deletion and insertion *ratios* are divided by
   ``len(reference.split(" "))`` of the normalised reference (the benchmark's divisor: it counts the empty strings
   that doubled spaces leave, so it can differ from jiwer's reference length).

The benchmark's average (``average_wer.py``) is the plain mean of the per-utterance WERs, times 100.
"""

from __future__ import annotations

import inspect
import string
from functools import lru_cache
from pathlib import Path
from typing import Any

from clonebench.core.errors import DependencyError

ZHON_VERSION = "2.1.1"
ZHCONV_VERSION = "1.4.3"
LANGUAGES = ("en", "zh")


@lru_cache(maxsize=1)
def _deleted() -> frozenset[str]:
    try:
        from zhon.hanzi import punctuation
    except ImportError as exc:
        raise DependencyError(f"the Seed-TTS-eval text rule needs zhon: pip install 'zhon=={ZHON_VERSION}'") from exc
    return frozenset(punctuation + string.punctuation) - {"'"}


@lru_cache(maxsize=1)
def _jiwer():
    import jiwer
    from jiwer.transformations import wer_default

    defaults = [p.default for p in inspect.signature(jiwer.process_words).parameters.values()][2:4]
    if any(d is not wer_default for d in defaults):
        raise DependencyError("jiwer.process_words no longer defaults to wer_default: the Seed-TTS-eval rule needs "
                              "the transform of jiwer 3's compute_measures (pip install 'jiwer==4.0.0')")
    return jiwer, wer_default


def seedtts_language(language: str) -> str:
    """The benchmark's two languages from a pair's language tag ('en', 'en-US', 'zh', 'zh-CN', 'cmn')."""
    hint = str(language or "").strip().lower().replace("_", "-").split("-")[0]
    hint = {"cmn": "zh", "eng": "en", "zho": "zh", "chi": "zh"}.get(hint, hint)
    if hint not in LANGUAGES:
        raise ValueError(f"Seed-TTS-eval scores English (en) and Chinese (zh) only, not {language!r}")
    return hint


def seedtts_normalise(text: str, language: str) -> str:
    """Steps 1-3 of the rule on one text (``language`` already 'en' or 'zh')."""
    deleted = _deleted()
    text = "".join(ch for ch in str(text) if ch not in deleted).replace("  ", " ")
    if language == "zh":
        return " ".join(text)
    if language == "en":
        return text.lower()
    raise ValueError(f"Seed-TTS-eval language must be 'en' or 'zh', not {language!r}")


def seedtts_wer(reference: str, hypothesis: str, language: str) -> dict[str, Any]:
    """One utterance scored as the benchmark scores it; ValueError where jiwer 3 refused the reference."""
    language = seedtts_language(language)
    ref, hyp = seedtts_normalise(reference, language), seedtts_normalise(hypothesis, language)
    jiwer, transform = _jiwer()
    if not ref or not transform(ref)[0]:
        raise ValueError(f"Seed-TTS-eval reference {reference!r} is empty after its text rule (jiwer 3, which the "
                         "benchmark calls, refuses it)")
    out = jiwer.process_words(ref, hyp)
    divisor = len(ref.split(" "))
    return {
        "wer": float(out.wer),
        "substitutions": out.substitutions / divisor,
        "deletions": out.deletions / divisor,
        "insertions": out.insertions / divisor,
        "hits": int(out.hits),
        "reference_words": int(out.hits + out.substitutions + out.deletions),
        "reference_normalised": ref,
        "hypothesis_normalised": hyp,
        "language": language,
    }


def score_items(items, language: str, transcribe, record) -> list:
    """Records of ``items`` for the ``seed_wer_<language>`` metric: each pair's clip transcribed by ``transcribe(path)``
    and compared with its text; a pair in another language, or a text empty after the rule, is that sample's error.
    ``record(sample_id, values=None, error=None)`` makes a record (the scorers' ScoreRecord)."""
    metric, other = f"seed_wer_{language}", f"seed_wer_{'zh' if language == 'en' else 'en'}"
    out = []
    for item in items:
        try:
            if seedtts_language(item.language) != language:
                raise ValueError(f"{metric} scores {'English' if language == 'en' else 'Chinese'} pairs; this pair "
                                 f"is {item.language!r} (ask for {other})")
            hypothesis = transcribe(Path(item.generated_path))
            scored = seedtts_wer(item.target_text, hypothesis, language)
        except ValueError as exc:
            out.append(record(item.sample_id, error=f"{metric}: {exc}"))
            continue
        out.append(record(item.sample_id, {metric: scored["wer"], f"{metric}_sub": scored["substitutions"],
                                           f"{metric}_del": scored["deletions"], f"{metric}_ins": scored["insertions"],
                                           f"seed_hypothesis_{language}": hypothesis}))
    return out


def seedtts_average(wers: list[float]) -> float:
    """``average_wer.py``'s WER: the plain mean of the per-utterance WERs, in percent, rounded to 3 places."""
    if not wers:
        raise ValueError("no utterance to average")
    import numpy as np

    return round(float(np.mean([float(w) for w in wers])) * 100, 3)


def zh_simplified(text: str) -> str:
    """The benchmark's conversion of a paraformer transcript: ``zhconv.convert(text, 'zh-cn')``."""
    try:
        import zhconv
    except ImportError as exc:
        raise DependencyError(f"Seed-TTS-eval's Chinese WER needs zhconv: pip install 'zhconv=={ZHCONV_VERSION}'") \
            from exc
    return zhconv.convert(text, "zh-cn")


def rule_protocol() -> dict[str, Any]:
    """The facts that decide the numbers (versions of zhon and jiwer; the deleted set's size)."""
    import importlib.metadata as md

    def version(name: str) -> str | None:
        try:
            return md.version(name)
        except md.PackageNotFoundError:
            return None

    return {"text_rule": "seedtts_process_one_v1", "zhon": version("zhon"), "jiwer": version("jiwer"),
            "deleted_characters": len(_deleted())}


def with_text_rule(sources: list[Path]) -> list[Path]:
    """A Seed-TTS WER scorer's source files and this text rule's, which computes its numbers: an edit to the rule
    changes the scorer's fingerprint."""
    return [*sources, Path(__file__)]
