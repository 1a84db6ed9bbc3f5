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


def latex_escape(text) -> str:
    """``text`` (any value, shown with ``str``) safe inside a LaTeX table cell or comment line."""
    return _SPECIAL.sub(lambda m: _LATEX.get(m.group(), " "), str(text))
