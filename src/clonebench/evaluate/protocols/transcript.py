"""One utterance's transcript against its reference text, as rvcbench 2.2.1's ``WERScorer.score`` compares them,
plus CER from the same texts (no second transcription).

Upstream's rule, after Whisper returns ``text`` for a pair decoded in ``language`` (the pair's language,
lower-cased: what ``transcribe`` reports back as ``result["language"]`` when a language is given):

1. the hypothesis is converted to Simplified Chinese when it holds a CJK character (whatever the language);
2. when the reference holds CJK or the language is ``zh``: both texts go through the Chinese normalisation
   and jieba segmentation (``zh_text``), whatever WER normalisation the run chose;
3. otherwise both get the run's normalisation (``wer_text``; upstream applies its English rule to French too);
4. WER = jiwer over the resulting words.

CER (what Seed-TTS-eval and most Chinese papers publish) is clonebench's addition: jiwer over the characters of the
same normalised texts, whitespace not counted (Seed-TTS-eval's Chinese rule: characters joined by spaces), for every
language, so a cross-lingual task has one definition in both directions.
"""

from __future__ import annotations

from pathlib import Path

from clonebench.evaluate.protocols import zh_text
from clonebench.evaluate.protocols.wer_text import edit_counts, normalise

ZH_RULE = "zh_jieba"
VERSION = "rvcbench-2.2.1 WERScorer text rule + CER over non-space characters; v1"


def characters(text: str) -> list[str]:
    return [ch for ch in text if not ch.isspace()]


def takes_chinese_rule(reference: str, language: str) -> bool:
    return zh_text.contains_cjk(reference) or language == "zh"


def score_transcript(reference: str, hypothesis: str, language: str, normalisation: str) -> dict:
    """WER and CER of ``hypothesis`` (Whisper's text) against ``reference`` for a pair in ``language``
    (Whisper's code, lower case: 'en', 'fr', 'zh').

    Returns ``hypothesis`` (as upstream records it: Simplified when it held CJK), ``text_rule`` (``zh_jieba`` or
    the normalisation's name), ``wer`` / ``cer`` and their edit counts (``wer_ref_words``, ``cer_ref_chars``, ...).
    A reference with no word after normalisation raises ValueError (jiwer refuses it upstream too)."""
    if zh_text.contains_cjk(hypothesis):
        hypothesis = zh_text.to_simplified(hypothesis)
    if takes_chinese_rule(reference, language):
        rule = ZH_RULE
        ref, hyp = zh_text.normalise(reference), zh_text.normalise(hypothesis)
        ref_words, hyp_words = zh_text.words(ref), zh_text.words(hyp)
    else:
        rule = normalisation
        ref, hyp = normalise(reference, normalisation, language), normalise(hypothesis, normalisation, language)
        ref_words, hyp_words = ref.split(), hyp.split()
    if not ref_words:
        raise ValueError(f"reference {reference!r} is empty after the {rule} rule")
    return {"hypothesis": hypothesis, "text_rule": rule, **edit_counts(ref_words, hyp_words, "wer"),
            **edit_counts(characters(ref), characters(hyp), "cer", "chars")}


def check_requirements() -> None:
    """Before any scoring: the pinned Chinese converter and segmenter (any hypothesis may hold CJK)."""
    zh_text.check_requirements()


def source_files() -> list[Path]:
    """The modules that implement the rule (their hashes join the WER scorer's provenance)."""
    from clonebench.evaluate.protocols import wer_text

    return [Path(__file__), Path(zh_text.__file__), Path(wer_text.__file__)]


def protocol(normalisation: str) -> dict:
    """What decides these numbers besides the transcript: part of the WER scorer's protocol and fingerprint."""
    return {"version": VERSION, "normalisation": normalisation,
            "chinese_rule_when": "the reference holds CJK or the language is zh",
            "hypothesis": "converted to Simplified when it holds CJK",
            "other_languages": (f"{normalisation} for every language" if normalisation != "whisper_english_v1" else
                                "whisper_english_v1 for en, Whisper's BasicTextNormalizer for other languages"),
            "cer": "jiwer over the non-space characters of the normalised texts", "zh": zh_text.protocol()}
