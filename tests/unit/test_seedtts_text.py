"""Seed-TTS-eval's text rule (seedtts/text.py) against values computed once with the benchmark's own
``process_one`` (run_wer.py at BytedanceSpeech/seed-tts-eval HEAD, under jiwer 3.1.0 and zhon 2.1.1), kept here as
literals: (reference, hypothesis, language) -> (wer, substitution, deletion, insertion ratios), or None where
upstream's jiwer 3 refuses the reference."""

from __future__ import annotations

import pytest

pytest.importorskip("zhon", reason="the Seed-TTS-eval rule needs zhon (the eval extra)")

from clonebench.seedtts.text import (  # noqa: E402
    seedtts_average,
    seedtts_language,
    seedtts_normalise,
    seedtts_wer,
)

T = 1 / 3
CASES = [
    ("Hello, world.", "hello world", "en", (0.0, 0.0, 0.0, 0.0)),
    ("It's a dog's life!", "its a dogs life", "en", (0.5, 0.5, 0.0, 0.0)),
    ("Don't stop—believing…", "don't stop believing", "en", (1.0, 0.5, 0.0, 0.5)),
    ("「你好」，世界。", "你好世界", "zh", (0.0, 0.0, 0.0, 0.0)),
    ("我们、他们！你们？", "我们他们你们", "zh", (0.0, 0.0, 0.0, 0.0)),
    ("你好 世界", "你好世界", "zh", (0.0, 0.0, 0.0, 0.0)),
    ("ＡＢＣ，全角。", "ABC全角", "zh", (0.6, 0.6, 0.0, 0.0)),
    ("Ｈｅｌｌｏ\u3000ｗｏｒｌｄ", "hello world", "en", (2.0, 1.0, 0.0, 1.0)),
    ("a  b", "a b", "en", (0.0, 0.0, 0.0, 0.0)),
    ("a   b", "a b", "en", (0.0, 0.0, 0.0, 0.0)),
    ("one    two", "one two", "en", (0.0, 0.0, 0.0, 0.0)),
    ("Hello world", "", "en", (1.0, 0.0, 1.0, 0.0)),
    ("你好世界", "", "zh", (1.0, 0.0, 1.0, 0.0)),
    ("Mixed 中文 and English!", "mixed 中文 and english", "en", (0.0, 0.0, 0.0, 0.0)),
    ("Mixed 中文 and English!", "mixed 中文 and english", "zh", (2 / 17, 2 / 23, 0.0, 0.0)),
    (" leading space", "leading space", "en", (0.0, 0.0, 0.0, 0.0)),
    ("trailing space. ", "trailing space", "en", (0.0, 0.0, 0.0, 0.0)),
    ("the cat sat", "the cat sat on the mat", "en", (1.0, 0.0, 0.0, 1.0)),
    ("the cat sat on the mat", "the sat", "en", (2 / 3, 0.0, 2 / 3, 0.0)),
    ("rock 'n' roll", "rock n roll", "en", (T, T, 0.0, 0.0)),
    ("Mr. O’Neil’s ‘quote’", "mr o'neil's quote", "en", (T, T, 0.0, 0.0)),
    ("他说：“好的”", "他说好的", "zh", (0.0, 0.0, 0.0, 0.0)),
    ("tab\there", "tab here", "en", (2.0, 1.0, 0.0, 1.0)),
    ("...", "anything", "en", None),
    ("", "x", "en", None),
    ("。", "好", "zh", None),
    ("。 ", "好", "zh", None),
    ("  ", "a", "en", None),
    ("ÉCOLE Ångström", "école ångström", "en", (0.0, 0.0, 0.0, 0.0)),
    ("第1名", "第一名", "zh", (T, T, 0.0, 0.0)),
    ("it's", "it ' s", "en", (3.0, 1.0, 0.0, 2.0)),
    ("a\u00a0\u00a0b", "a b", "en", (0.0, 0.0, 0.0, 0.0)),
    ("Ok.", "OK", "en", (0.0, 0.0, 0.0, 0.0)),
    ("三   个", "三个", "zh", (0.0, 0.0, 0.0, 0.0)),
]


@pytest.mark.parametrize("reference, hypothesis, language, expected", CASES)
def test_rule_equals_upstream(reference, hypothesis, language, expected):
    if expected is None:
        with pytest.raises(ValueError, match="empty after its text rule"):
            seedtts_wer(reference, hypothesis, language)
        return
    out = seedtts_wer(reference, hypothesis, language)
    got = (out["wer"], out["substitutions"], out["deletions"], out["insertions"])
    assert got == pytest.approx(expected, rel=0, abs=1e-15)


def test_normalised_texts():
    assert seedtts_normalise("Don't stop—believing…", "en") == "don't stopbelieving"
    assert seedtts_normalise("你好 世界", "zh") == "你 好   世 界"
    assert seedtts_normalise("a   b", "en") == "a  b"  # one replace pass, as upstream
    assert seedtts_normalise("Mr. O’Neil’s", "en") == "mr oneils"  # only the ASCII apostrophe is kept
    out = seedtts_wer("「你好」，世界。", "你好世界", "zh-CN")
    assert out["reference_normalised"] == out["hypothesis_normalised"] == "你 好 世 界"
    assert out["language"] == "zh"


def test_languages():
    assert seedtts_language("en-US") == "en" and seedtts_language("cmn") == "zh" and seedtts_language("ZH") == "zh"
    with pytest.raises(ValueError, match="English .* and Chinese"):
        seedtts_language("fr")


def test_average_is_plain_mean_in_percent():
    assert seedtts_average([0.0, 0.5, 1.0, 2 / 3]) == round((0.0 + 0.5 + 1.0 + 2 / 3) / 4 * 100, 3)
    with pytest.raises(ValueError):
        seedtts_average([])


def test_zh_simplified():
    pytest.importorskip("zhconv")
    from clonebench.seedtts.text import zh_simplified

    assert zh_simplified("漢語說話") == "汉语说话"
