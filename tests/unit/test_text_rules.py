"""The WER text rule equals rvcbench 2.2.1's own functions (imported from the --no-deps wheel), string by string,
with the same pinned converter (OpenCC 1.4.2) and segmenter (jieba 0.42.1) installed; CER; the pins' refusal.

The table covers English, French, Simplified and Traditional Chinese, mixed script and both cross-lingual
directions. ``WERScorer.score`` is upstream's real method; only its Whisper model is replaced by ``FixedTranscript``,
which returns a given text the way ``transcribe`` does when a language is given (``result["language"]`` = the
language asked for), so what is compared is the text rule after transcription, which is what this module owns."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import jieba
import pytest
from rvcbench.evaluation.scorers import text as upstream_text
from rvcbench.evaluation.scorers.wer import WERScorer, normalize_english

from clonebench.core.errors import DependencyError
from clonebench.evaluate.protocols import transcript, wer_text, zh_text
from clonebench.evaluate.scorers.whisper_common import whisper_language
from tests.conftest import REPO

# (reference, Whisper's text, the pair's language as the suites write it)
TABLE = [
    ("He was not an ill-disposed young man.", "he was not an ill disposed young man", "EN"),
    ("I have 2 cats.", " I have two cats", "EN"),
    ("It’s “fine”… isn't it?", "It's fine, isn't it", "EN"),
    ("Hein !… la Léda ?… vous êtes fou !", " Hein! La Léda? Vous êtes fou.", "FR"),
    ("Il demande qu’il paye.", "Il demande qu'il paye.", "FR"),
    ("« Bonjour », dit-elle à l'été.", "bonjour dit elle a l ete", "FR"),
    ("前者已向后者发出收购要约", "前者以相後,可發出,可可要約", "ZH"),
    ("前者已向后者发出收购要约", "前者已向後者發出收購要約。", "ZH"),
    ("漢字轉換測試，臺灣的軟體與記憶體", "汉字转换测试台湾的软件与记忆体", "ZH"),
    ("他说：“你好！”（测试）【一】《书》、好…", "他說你好測試一書好", "ZH"),
    ("我用 iPhone 12 拍照", "我用iPhone12拍照", "ZH"),
    ("ＡＢＣ１２３，测试", "abc123测试", "ZH"),
    ("在法国有许多这样的例子.", "There are many examples of this in France.", "ZH"),   # EN_to_ZH, English output
    ("There are many examples of this in France.", "There are many examples 在法國.", "EN"),  # ZH_to_EN, CJK output
    ("Hello, World!", "hello world", "ZH"),                                     # language zh, no CJK anywhere
    ("前者已向后者", "The former has", "EN"),                                     # CJK reference, language en
    ("前者已向后者", "", "ZH"),
    ("one two three", "", "EN"),
]
NORMALISATIONS = ("ascii_punctuation_removed_v2", "lowercase_v1")


class FixedTranscript:
    """Stands in for upstream's Whisper model only: returns ``text`` as ``transcribe`` would with a language."""

    def __init__(self, text: str):
        self.text = text

    def transcribe(self, path, **kwargs):
        return {"text": self.text, "language": kwargs.get("language")}


def upstream_score(reference: str, hypothesis: str, language: str, normalisation: str) -> dict:
    scorer = WERScorer("cpu", None)
    scorer.set_normalization(normalisation)
    scorer.model = FixedTranscript(hypothesis)
    return scorer.score(SimpleNamespace(generated="unused.wav", text=reference, language=language))


@pytest.mark.parametrize("normalisation", NORMALISATIONS)
@pytest.mark.parametrize("reference,hypothesis,language", TABLE)
def test_wer_and_recorded_hypothesis_equal_rvcbench(reference, hypothesis, language, normalisation):
    expected = upstream_score(reference, hypothesis, language, normalisation)
    ours = transcript.score_transcript(reference, hypothesis, whisper_language(language), normalisation)
    assert ours["wer"] == expected["wer"]
    assert ours["hypothesis"] == expected["predicted_text"]
    assert ours["wer_edits"] / ours["wer_ref_words"] == pytest.approx(ours["wer"])


@pytest.mark.parametrize("reference,hypothesis,language", TABLE)
def test_normalised_strings_equal_rvcbench(reference, hypothesis, language):
    for text in (reference, hypothesis):
        assert zh_text.contains_cjk(text) == upstream_text._contains_cjk(text)
        assert zh_text.to_simplified(text) == upstream_text._to_simplified_zh(text)
        assert zh_text.normalise(text) == upstream_text._normalize_zh_text(text)
        segmented = " ".join(jieba.lcut(upstream_text._normalize_zh_text(text)))
        assert zh_text.words(zh_text.normalise(text)) == segmented.split()
        for name in NORMALISATIONS:
            assert wer_text.normalise(text, name, whisper_language(language)) == normalize_english(text, name)


def test_traditional_is_converted_and_the_chinese_rule_ignores_the_normalisation_choice():
    ours = transcript.score_transcript("前者已向后者发出收购要约", "前者已向後者發出收購要約。", "zh", "lowercase_v1")
    assert ours["hypothesis"] == "前者已向后者发出收购要约。" and ours["text_rule"] == transcript.ZH_RULE
    assert ours["wer"] == 0.0 and ours["cer"] == 0.0
    # without the conversion, 後/發/收購/約 would all be errors: the converter decides the number
    assert upstream_text._normalize_zh_text("後者") == "后者"


def test_cer_counts_characters_without_whitespace():
    one_wrong = transcript.score_transcript("前者已向后者发出收购要约", "前者已向后者发出收够要约", "zh",
                                            "ascii_punctuation_removed_v2")
    assert (one_wrong["cer"], one_wrong["cer_edits"], one_wrong["cer_ref_chars"]) == (1 / 12, 1, 12)
    assert one_wrong["wer"] > one_wrong["cer"]  # the word 收购 is wrong as a whole
    english = transcript.score_transcript("The cat sat.", "the bat sat", "en", "ascii_punctuation_removed_v2")
    assert (english["cer_edits"], english["cer_ref_chars"]) == (1, 9)  # "thecatsat": one substitution
    spaced = transcript.score_transcript("我用 iPhone 拍照", "我用iPhone拍照", "zh", "ascii_punctuation_removed_v2")
    assert spaced["cer"] == 0.0


def test_whisper_english_normaliser_is_applied_to_english_only():
    english = transcript.score_transcript("Mr. Smith has 2 cats.", "mister smith has two cats", "en",
                                          "whisper_english_v1")
    assert english["wer"] == 0.0
    french = transcript.score_transcript("Vingt-deux chats, Mr. Dupont !", "vingt deux chats mr dupont", "fr",
                                         "whisper_english_v1")
    assert french["wer"] == 0.0  # BasicTextNormalizer: symbols out, lower case, no English spellings
    assert wer_text.normalise("Mr. Dupont", "whisper_english_v1", "fr") == "mr dupont"


def test_protocol_pins_versions_and_data_hashes():
    block = transcript.protocol("ascii_punctuation_removed_v2")["zh"]
    assert block["converter"]["package"] == "OpenCC" and block["converter"]["version"] == "1.4.2"
    assert {"t2s.json", "TSPhrases.ocd2", "TSCharacters.ocd2"} <= set(block["converter"]["files_sha256"])
    assert block["segmenter"]["version"] == "0.42.1"
    assert set(block["segmenter"]["files_sha256"]) == set(zh_text.JIEBA_DATA)
    assert all(len(h) == 64 for h in block["segmenter"]["files_sha256"].values())


def _python(code: str, tmp_path, extra_path: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (extra_path, str(REPO / "src")) if p),
           "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_a_different_opencc_module_is_refused_naming_the_fix(tmp_path):
    # an importable `opencc` that is not the pinned wheel (as opencc-python-reimplemented installs: no __version__)
    shadow = tmp_path / "shadow" / "opencc"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("class OpenCC:\n    def __init__(self, config):\n        pass\n"
                                        "    def convert(self, text):\n        return text\n")
    code = ("from clonebench.evaluate.scorers.whisper_faster import FasterWhisperScorer\n"
            "FasterWhisperScorer.preflight({})\n")
    result = _python(code, tmp_path, str(tmp_path / "shadow"))
    assert result.returncode != 0
    assert "DependencyError" in result.stderr and "OpenCC==1.4.2" in result.stderr
    assert "pip install 'opencc==1.4.2' 'jieba==0.42.1'" in result.stderr


def test_segmenting_writes_no_cache_outside_the_run(tmp_path):
    result = _python("from clonebench.evaluate.protocols import zh_text\n"
                     "print(zh_text.words(zh_text.normalise('前者已向后者发出收购要约')))", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "前者" in result.stdout and list((tmp_path / "tmp").iterdir()) == []  # jieba.initialize() would write one


def test_check_requirements_passes_with_the_pins_installed():
    zh_text.check_requirements()
    with pytest.raises(DependencyError, match="pinned"):
        original = zh_text.SEGMENTER_VERSION
        try:
            zh_text.SEGMENTER_VERSION = "0.0.0"
            zh_text.check_requirements()
        finally:
            zh_text.SEGMENTER_VERSION = original
