"""Chinese, French and cross-lingual WER/CER on eSpeak NG speech through the real faster-whisper (base, multilingual)
model, equal to rvcbench 2.2.1's ``WERScorer.score`` text rule applied to the same transcript.

Mandarin is spoken with ``espeak-ng -v cmn-latn-pinyin``: Debian 12's espeak-ng 1.51 ``-v cmn`` reads the pinyin of
its dictionary with English letter rules (``-x`` shows ``(en)``), which Whisper hears as English; the pinyin voice
speaks Mandarin. Whisper base answers the Mandarin clip in Traditional characters: the converter is exercised for real.
``FixedTranscript`` (see tests/unit/test_text_rules.py) hands upstream's scorer the transcript Whisper produced.
"""

from __future__ import annotations

import pytest

from clonebench.core.hashing import HashCache
from clonebench.evaluate.protocols import transcript, zh_text
from tests.conftest import espeak_clips, score_item
from tests.unit.test_text_rules import upstream_score

pytestmark = pytest.mark.slow
# (voice and its options, spoken text, reference text, the pair's language)
CLIPS = {
    "zh": ("cmn-latn-pinyin", "前者已向后者发出收购要约", "前者已向后者发出收购要约", "ZH"),
    "fr": ("fr", "Il demande qu'il paye. Vous êtes fou !", "Il demande qu’il paye. Vous êtes fou !", "FR"),
    # cross-lingual, EN_to_ZH: a clone asked for Mandarin that spoke English (the reference holds CJK)
    "en_to_zh": ("en-us -s 130", "There are many examples of this in France.", "在法国有许多这样的例子.", "ZH"),
    # cross-lingual, ZH_to_EN: an English target
    "zh_to_en": ("en-us -s 130", "There are many examples of this in France.", "There are many examples of this in France.", "EN"),
}


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    paths = espeak_clips(tmp_path_factory.mktemp("espeak_multilingual"),
                         {name: (voice, spoken) for name, (voice, spoken, _, _) in CLIPS.items()})
    return {name: score_item(paths[name], text=reference, language=language, sample_id=name)
            for name, (_, _, reference, language) in CLIPS.items()}


@pytest.fixture(scope="module")
def whisper():
    from clonebench.evaluate.scorers.whisper_faster import FasterWhisperScorer

    scorer = FasterWhisperScorer({"backend": "faster_whisper", "model": "base", "local_path": None, "sha256": None,
                                  "normalisation": "ascii_punctuation_removed_v2", "compute_type": "auto",
                                  "allow_hub": False}, "cpu", HashCache(None))
    scorer.load()
    yield scorer
    scorer.release()


def test_each_language_path_equals_rvcbench_on_real_transcripts(clips, whisper):
    raw = {}  # what Whisper returned, recorded on its way through score_batch (one transcription)
    transcribe = whisper.transcribe_batch
    whisper.transcribe_batch = lambda items: [(raw.setdefault(i.sample_id, t.text), t)[1] for i, t in zip(items, transcribe(items))]
    records = {r.sample_id: r.values for r in whisper.score_batch(list(clips.values()))}
    for name, item in clips.items():
        expected = upstream_score(item.target_text, raw[name], item.language, "ascii_punctuation_removed_v2")
        assert records[name]["wer"] == expected["wer"], name
        assert records[name]["hypothesis"] == expected["predicted_text"], name
    # the Chinese clips were recognised as Chinese, in Traditional characters that the pinned converter simplified
    assert zh_text.contains_cjk(raw["zh"]) and records["zh"]["text_rule"] == transcript.ZH_RULE
    assert records["zh"]["cer"] < 1.0 and records["zh"]["cer_ref_chars"] == len(zh_text.normalise(clips["zh"].target_text))
    # Whisper base answers in Traditional characters (measured: 前者以相後,可發出,可可要約); the record is Simplified
    assert zh_text.to_simplified(raw["zh"]) != raw["zh"]
    assert records["zh"]["hypothesis"] == zh_text.to_simplified(raw["zh"])
    assert records["fr"]["text_rule"] == "ascii_punctuation_removed_v2" and records["fr"]["wer"] < 1.0
    # English speech for a Chinese target: Chinese rule, and badly scored (measured 0.857: Whisper forced to zh
    # answers with a few Chinese words)
    assert records["en_to_zh"]["text_rule"] == transcript.ZH_RULE and records["en_to_zh"]["wer"] > 0.5
    assert records["zh_to_en"]["text_rule"] == "ascii_punctuation_removed_v2" and records["zh_to_en"]["wer"] < 0.5
