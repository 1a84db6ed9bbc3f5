"""Text shared by every table renderer: LaTeX escaping (one copy for the paper, compare, suite and listening tables).

Every character LaTeX treats specially in text mode is escaped in one pass (a second pass would escape the
braces of ``\\textbackslash{}``); control characters, which would break a table row, become spaces. A system name
such as ``a_b {v2} $5 & co`` prints as it reads.
"""

from __future__ import annotations

import re

_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
          "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
          "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}"}  # < > | print as other glyphs in OT1
_SPECIAL = re.compile(r"[\\&%$#_{}~^<>|]|[\x00-\x1f\x7f]")


# rates (0..1) every table shows x100: the failure rate with one decimal ("fail%"), Seed-TTS-eval's WER with two
# (as papers print it)
PERCENT_DIGITS = {"fail": 1, "seed_wer_en": 2, "seed_wer_zh": 2}
PERCENT_METRICS = frozenset(PERCENT_DIGITS)
PERCENT_LABELS = {"fail": "fail%", "seed_wer_en": "Seed WER-en%", "seed_wer_zh": "Seed WER-zh%"}


def is_percent(metric: str) -> bool:
    return metric in PERCENT_METRICS


def metric_label(metric: str, default: str | None = None) -> str:
    """A column's name: ``fail%`` for the failure rate, else ``default`` (or the metric's own name)."""
    return PERCENT_LABELS.get(metric, default if default is not None else metric)


def metric_number(metric: str, value, digits: int = 3, sign: bool = False) -> str:
    """``value`` of ``metric`` as a table shows it: a rate x100 with one decimal (``12.5``), any other metric with
    ``digits`` decimals; ``sign`` for differences (a rate's difference is in percentage points)."""
    if is_percent(metric):
        value, digits = value * 100, PERCENT_DIGITS[metric]
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def latex_escape(text) -> str:
    """``text`` (any value, shown with ``str``) safe inside a LaTeX table cell or comment line."""
    return _SPECIAL.sub(lambda m: _LATEX.get(m.group(), " "), str(text))
