"""The HTML report's escaping: JSON inside <script>, and the word-difference rendering of transcripts."""

from __future__ import annotations

import json

from clonebench.report.html_page import script_json
from clonebench.report.html_rows import word_diff


def test_script_json_cannot_close_or_comment_out_its_element():
    payload = {"label": "</script><!-- <script>alert(1)</script> & \u2028"}
    text = script_json(payload)
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == payload


def test_word_diff_marks_substitutions_deletions_insertions_and_escapes():
    html = word_diff("Glue the sheet to the dark blue background.", "glue the sheet to the dark glue back",
                     "ascii_punctuation_removed_v2")
    assert html == ('glue the sheet to the dark <del title="reference">blue background</del> '
                    '<ins title="hypothesis">glue back</ins>')
    assert word_diff("a b c", "a c", "lowercase_v1") == 'a <del title="missing">b</del> c'
    assert word_diff("a c", "a b c", "lowercase_v1") == 'a <ins title="inserted">b</ins> c'
    hostile = word_diff("say <b>hi</b>", "say <img src=x onerror=alert(1)>", "lowercase_v1")
    assert "<img" not in hostile and "&lt;img" in hostile and "<b>" not in hostile
    assert word_diff("some words", "", "lowercase_v1") == '<del title="missing">some words</del>'
