"""One LaTeX escaper (``report.format.latex_escape``) for every LaTeX table: the escaper itself, then each table kind
(paper, compare, listening, suite) rendered with a hostile system / model / label name, built with the project's
own functions. The escaped name must appear, the raw name nowhere, nothing escaped twice, and every line must still
be a well-formed table row or comment (column count, braces, math shifts). Compiling with pdflatex, when it is
installed, is an extra check on top."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from clonebench.report.format import latex_escape
from clonebench.report.tables import ResultTable
from tests.unit.test_listening_paper_columns import summary as listening_summary
from tests.unit.test_suite_results import fake_suite

# every special character, a backslash before braces, and a newline followed by what would end the table
HOSTILE = "Fish $2 {beta}_v1 & co 50% #1 \\ ~^\n\\end{tabular} injected"
HEAD, TAIL = HOSTILE.split("\n")
REASON = "server said: 100% & {broken}\n\\bottomrule $x$_1"


# ---------------------------------------------------------------------------------------------- latex_escape


@pytest.mark.parametrize("char, escaped", [("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"),
                                           ("#", r"\#"), ("_", r"\_"), ("{", r"\{"), ("}", r"\}"),
                                           ("~", r"\textasciitilde{}"), ("^", r"\textasciicircum{}")])
def test_each_special_character_is_escaped(char, escaped):
    assert latex_escape(char) == escaped
    assert latex_escape(f"a{char}b") == f"a{escaped}b"


def test_backslash_and_braces_are_escaped_in_one_pass():
    # a second pass would turn the braces of \textbackslash{} into \{\}
    assert latex_escape("\\{}") == r"\textbackslash{}\{\}"
    assert latex_escape("\\\\") == r"\textbackslash{}\textbackslash{}"
    assert latex_escape("a_b {v2} $5 & co") == r"a\_b \{v2\} \$5 \& co"
    assert latex_escape(HEAD) == r"Fish \$2 \{beta\}\_v1 \& co 50\% \#1 \textbackslash{} \textasciitilde{}\textasciicircum{}"


def test_control_characters_become_spaces():
    assert latex_escape("a\nb\rc\td\x00e\x1bf\x7fg") == "a b c d e f g"
    assert "\n" not in latex_escape(HOSTILE) and "\r" not in latex_escape("x\r\ny")
    assert latex_escape("x\r\ny") == "x  y"


def test_plain_and_unicode_text_is_unchanged():
    for text in ("fish-s2 (partial)", "Café Δ −0.5 †", "", "SIM↑ [0.1, 0.2]"):
        assert latex_escape(text) == text


def test_any_value_is_shown_with_str():
    assert latex_escape(42) == "42" and latex_escape(3.5) == "3.5" and latex_escape(None) == "None"
    assert latex_escape(["a_b"]) == r"['a\_b']"

    class Named:
        def __str__(self):
            return "x & y"

    assert latex_escape(Named()) == r"x \& y"


# ---------------------------------------------------------------------------------------------- table checks


def _ncols(spec: str) -> int:
    return len(re.findall(r"[lcrpX]", spec))


def assert_safe(text: str, *names: str) -> None:
    """Each name appears escaped once-over (never raw, never escaped twice); every line is a comment or a row
    with the tabular's column count, balanced braces and paired math shifts."""
    for name in names:
        assert latex_escape(name) in text, name
        assert latex_escape(latex_escape(name)) not in text
        head, _, tail = name.partition("\n")
        assert head not in text, f"raw {head!r} in the output"
        assert not tail or tail not in text, f"raw {tail!r} in the output (a newline broke out of a line)"
    assert "textbackslash{}textbackslash" not in text  # an escape escaped again
    assert text.count(r"\begin{tabular}") == text.count(r"\end{tabular}") >= 1
    columns = None
    for number, line in enumerate(text.splitlines(), 1):
        where = f"line {number}: {line!r}"
        if line.startswith("%") or not line.strip():
            continue
        bare = re.sub(r"\\[{}$&%#_]", "", line)  # drop the escaped specials
        assert bare.count("{") == bare.count("}"), where
        assert bare.count("$") % 2 == 0, where
        text_mode = re.sub(r"\$[^$]*\$", "", bare)  # outside math: no raw special character is left
        assert not set(text_mode) & set("%#_^~"), where
        begin = re.match(r"\\begin\{tabular\}\{([^}]*)\}", line)
        if begin:
            columns = _ncols(begin.group(1))
        elif line.endswith(r"\\"):
            assert columns is not None, where
            span = re.match(r"\\multicolumn\{(\d+)\}", line)  # a title row spanning the columns: no &
            cells = 1 + len(re.findall(r"(?<!\\)&", line))
            assert (int(span.group(1)) if span else cells) == columns and (not span or cells == 1), where
        else:
            assert line.startswith(("\\toprule", "\\midrule", "\\bottomrule", "\\end{tabular}")), where


PREAMBLE = "\\documentclass{article}\n\\usepackage[T1]{fontenc}\n\\usepackage[utf8]{inputenc}\n" \
           "\\usepackage{booktabs}\n\\begin{document}\n"


def compiles(text: str, tmp_path) -> None:
    """The table compiles in a minimal document (only where pdflatex is installed)."""
    pdflatex = shutil.which("pdflatex")
    if pdflatex is None:
        pytest.skip("pdflatex is not installed: the structural checks above stand alone")
    (tmp_path / "table.tex").write_text(PREAMBLE + text + "\n\\end{document}\n", encoding="utf-8")
    done = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error", "table.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout[-3000:]
    assert (tmp_path / "table.pdf").is_file()


# ---------------------------------------------------------------------------------------------- paper table


def paper_text(tmp_path) -> str:
    from clonebench.listening.paper_columns import attach_listening
    from clonebench.report.paper import latex, run_rows

    stat = lambda mean: {"mean": mean, "ci": [mean - 0.1, mean + 0.1], "n_valid": 2, "n_requested": 2}  # noqa: E731
    table = ResultTable(label=HOSTILE, rows=[], status="complete",
                        metrics_summary={"sim": stat(0.6), "wer": stat(0.1), "mos": stat(3.9)})
    other = ResultTable(label="plain run", rows=[], status="partial", metrics_summary={"sim": stat(0.5)})
    rows = run_rows([table, other])
    # a listening test whose unmatched system is named HOSTILE: it lands in the footnotes ("Not in this table")
    test = listening_summary()
    test["systems"][1]["label"] = HOSTILE
    (tmp_path / "mos").mkdir()
    (tmp_path / "mos" / "results.json").write_text(json.dumps(test))
    samples = [{"p1": {"generated_sha256": "a1"}, "p2": {"generated_sha256": "a2"}}, {}]
    rows += attach_listening(rows, samples, [tmp_path / "mos"])
    return latex(rows)


def test_paper_table_escapes_run_names_and_footnotes(tmp_path):
    text = paper_text(tmp_path)
    assert_safe(text, HOSTILE)
    assert any(line.startswith("% ") and "Not in this table: " + latex_escape(HOSTILE) in line
               for line in text.splitlines())
    assert latex_escape(HOSTILE) + " & " in text  # the row's name cell
    assert "plain run (partial) & " in text and r"MOS (human)$\uparrow$" in text


def test_paper_table_compiles(tmp_path):
    compiles(paper_text(tmp_path), tmp_path)


# ---------------------------------------------------------------------------------------------- compare table


def _system(label: str, shift: float, pairs: int = 12):
    from clonebench.report.systems import System

    rng = np.random.default_rng(7)
    rows = [{"sample_id": f"p{k}", "pair_id": f"p{k}", "speaker_id": f"s{k % 4}",
             "sim": float(0.5 + shift + rng.normal(0, 0.05)), "wer": float(0.1 + rng.uniform(0, 0.05))}
            for k in range(pairs)]
    summary = {m: {"mean": float(np.mean([r[m] for r in rows])), "n_valid": pairs, "n_requested": pairs}
               for m in ("sim", "wer")}
    table = ResultTable(label=label, rows=rows, status="complete", metrics_summary=summary)
    return System(label, [table], [{"ecapa": {"fingerprint": "e" * 64}, "whisper": {"fingerprint": "w" * 64}}])


def compare_text(incompatible: bool = False) -> str:
    from clonebench.report.compare_render import latex
    from clonebench.report.multi_compare import compare_systems

    systems = [_system("plain", 0.0), _system(HOSTILE, 0.1, pairs=10 if incompatible else 12)]
    result = compare_systems(systems, draws=200, allow_incompatible=incompatible)
    assert result["ranked"] is not incompatible
    return latex(result)


def test_compare_table_escapes_system_names_and_notes():
    text = compare_text()
    assert_safe(text, HOSTILE, f"{HOSTILE} - plain")
    assert latex_escape(HOSTILE) + " & 1 & 12 & " in text  # the system's row
    assert any(line.startswith("% Systems: plain (1 run), " + latex_escape(HOSTILE)) for line in text.splitlines())


def test_compare_table_escapes_the_problems_of_an_unranked_comparison():
    text = compare_text(incompatible=True)  # HOSTILE holds other pairs: the problem line names it
    assert_safe(text, HOSTILE)
    assert any(line.startswith("% **Ranking disabled**") and latex_escape(HOSTILE) in line
               for line in text.splitlines())


def test_compare_table_compiles(tmp_path):
    compiles(compare_text(), tmp_path)


# ---------------------------------------------------------------------------------------------- listening table


def listening(kind: str) -> dict:
    """A listening summary (the paper-column test's builder) with its statistics from the project's own functions,
    labelled the way ``listening.results.analyse`` labels them; system S1 is HOSTILE, a rater and reason too."""
    from clonebench.listening import agreement
    from clonebench.stats import raters as stats

    out = listening_summary(kind)
    out["systems"][0]["label"] = HOSTILE
    labels = {s["code"]: s["label"] for s in out["systems"]}
    out["raters"]["excluded"] = [{"rater": HOSTILE, "file": "r.json", "reason": REASON}]
    out["title"] = HOSTILE
    out["ci_method"], out["test_method"] = "two-way bootstrap, 95 % CI", "Wilcoxon_signed-rank"
    rng = np.random.default_rng(3)
    if kind == "cmos":
        grids = {"S2 vs S1": rng.integers(-3, 4, (5, 6)).astype(float)}
    else:
        grids = {c: rng.integers(1, 6, (5, 6)).astype(float) for c in ("S1", "S2", "natural")}
    matrix = np.hstack(list(grids.values()))
    out["agreement"] = {"krippendorff_alpha": agreement.alpha(matrix, kind), "level": agreement.level(kind),
                        "units": int(matrix.shape[1]), "raters": int(matrix.shape[0])}
    if kind == "cmos":
        out["cmos"] = stats.cmos(grids, draws=200)
        for row in out["cmos"]:
            second, first = row["condition"].split(" vs ")
            row["label"] = f"{labels[second]} vs {labels[first]}"
        out.update(scores=[], differences=[])
        return out
    found, boots = stats.scores(grids, draws=200)
    for row in found:
        row["label"] = labels[row["condition"]]
    diffs = stats.differences(grids, boots, [("S1", "S2"), ("S1", "natural"), ("S2", "natural")])
    for row in diffs:
        row["label"] = f"{labels[row['b']]} − {labels[row['a']]}"
    out.update(scores=found, differences=diffs, cmos=[])
    return out


@pytest.mark.parametrize("kind", ["mos", "cmos"])
def test_listening_table_escapes_labels_and_notes(kind):
    from clonebench.listening.tables import latex

    text = latex(listening(kind))
    assert_safe(text, HOSTILE, REASON)
    label = latex_escape(HOSTILE)
    if kind == "cmos":
        assert "s2cpp vs " + label + " & " in text
    else:
        assert label + " & " in text and "s2cpp -- " + label + " & " in text  # score row and difference row
    excluded = next(line for line in text.splitlines() if line.startswith("% Raters:"))
    assert label + ": " + latex_escape(REASON) in excluded


@pytest.mark.parametrize("kind", ["mos", "cmos"])
def test_listening_table_compiles(kind, tmp_path):
    from clonebench.listening.tables import latex

    compiles(latex(listening(kind)), tmp_path)


# ---------------------------------------------------------------------------------------------- suite table


@pytest.fixture(scope="module")
def suite_results(tmp_path_factory):
    """A suite run (the suite tests' builder) whose model is HOSTILE and whose derived task says REASON."""
    from clonebench.suite.results import load_suite_results

    suite_dir, _ = fake_suite(tmp_path_factory.mktemp("latex_suite"), "model", 1,
                              tasks=["audioshift", "compression-mp3-64k"])
    manifest = json.loads((suite_dir / "suite_manifest.json").read_text())
    manifest["suite_model"] = HOSTILE
    manifest["tasks"]["compression-mp3-64k"]["reason"] = REASON
    (suite_dir / "suite_manifest.json").write_text(json.dumps(manifest))
    results = load_suite_results(suite_dir)
    assert results.model == HOSTILE and results.task("compression-mp3-64k").reason == REASON
    return results


def test_suite_table_escapes_the_model_and_reasons(suite_results):
    from clonebench.suite.tables import latex

    text = latex(suite_results)
    assert_safe(text, HOSTILE, REASON)
    lines = text.splitlines()
    assert any(line.startswith("% core-v1: " + latex_escape(HOSTILE) + ", suite sha256 ") for line in lines)
    assert "% compression-mp3-64k: " + latex_escape(REASON) in lines
    assert any(line.startswith("compression-mp3-64k & not scored & ") for line in lines)


def test_suite_table_compiles(suite_results, tmp_path):
    from clonebench.suite.tables import latex

    compiles(latex(suite_results), tmp_path)
