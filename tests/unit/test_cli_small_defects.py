"""Small command-line defects, one class each: a spec that cannot be a path is an error naming it (never a
traceback); `compare` prints and writes the same escaped text; per-task lines of `score` have no dangling
separator; subcommand help keeps its usage lines; published rows are never bold and never keep a run from it."""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from clonebench.cli.main import SUBCOMMANDS, build_parser
from clonebench.cli.main import main as cli

LONG = "model-" + "q" * 4994  # 5000 characters: ENAMETOOLONG as a path
ESCAPED = "bad\x1b[31mred\x07bell"


def _error(capsys) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    return captured.err


# ------------------------------------------------------------------------------------ 1. specs that are no path


@pytest.mark.parametrize("spec", [LONG, f"{LONG}={LONG}", f"x={LONG}", "name\x00with-nul", "nul=a\x00b"])
def test_compare_spec_that_cannot_be_a_path_is_a_clear_error(spec, tmp_path, capsys):
    assert cli(["compare", spec, str(tmp_path)]) == 2
    err = _error(capsys)
    assert "clonebench compare: error:" in err
    assert len(err) < 600, "the spec is shown truncated"
    assert "\x00" not in err


def test_compare_spec_with_terminal_escapes_is_named_escaped(tmp_path, capsys):
    assert cli(["compare", ESCAPED, str(tmp_path)]) == 2
    err = _error(capsys)
    assert "\x1b" not in err and "\x07" not in err
    assert "bad\\x1b[31mred" in err


def test_compare_spec_that_is_a_symlink_loop(tmp_path, capsys):
    (tmp_path / "one").symlink_to(tmp_path / "two")
    (tmp_path / "two").symlink_to(tmp_path / "one")
    assert cli(["compare", str(tmp_path / "one"), f"B={tmp_path / 'two'}"]) == 2
    err = _error(capsys)
    assert "one" in err and "symbolic links" in err


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root ignores directory permissions")
def test_compare_spec_below_an_unsearchable_folder(tmp_path, capsys):
    locked = tmp_path / "locked"
    (locked / "run").mkdir(parents=True)
    locked.chmod(0)
    try:
        assert cli(["compare", str(locked / "run"), str(tmp_path)]) == 2
        assert "locked" in _error(capsys)
    finally:
        locked.chmod(0o755)


def test_probe_path_never_raises(tmp_path):
    from clonebench.report.systems import probe_path

    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for text in (LONG, "a\x00b", str(tmp_path / "loop"), str(tmp_path / "loop" / "x")):
        assert probe_path(text) is False
    assert probe_path(str(tmp_path)) is True


@pytest.mark.parametrize("argv", [["report", LONG], ["status", "run\x00dir"], ["plot", LONG + "/x"],
                                  ["compare-check", LONG, LONG], ["compare", LONG], ["compare", "--current", LONG]])
def test_path_arguments_of_every_command_are_probed_safely(argv, capsys):
    assert cli(argv) == 2
    err = _error(capsys)
    assert f"clonebench {argv[0]}: error:" in err and len(err) < 600


def test_historical_table_that_cannot_be_a_path(capsys):
    from clonebench.core.errors import ClonebenchError
    from clonebench.report.tables import load_plain

    for text in (LONG, "t\x00.json"):
        with pytest.raises(ClonebenchError) as caught:
            load_plain(text)
        assert len(str(caught.value)) < 400 and "\x00" not in str(caught.value)


# ------------------------------------------------------------------------ 2. compare: stdout == --output file


@pytest.fixture
def hostile_systems(monkeypatch):
    from clonebench.report import multi_compare, systems
    from tests.unit.test_latex_escaping import _system

    made = [_system("plain", 0.0), _system(f"sys\x1b[2J\x07\u202e{'z' * 3}", 0.08)]
    monkeypatch.setattr(systems, "load_systems", lambda specs: made)
    monkeypatch.setattr(multi_compare, "compare_systems",
                        functools.partial(multi_compare.compare_systems, draws=200))
    return made


@pytest.mark.parametrize("fmt", ["html", "md", "json", "latex", "csv"])
def test_compare_prints_what_it_writes(fmt, hostile_systems, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli(["compare", "a", "b", "--format", fmt, "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    written = (out / {"md": "comparison.md", "latex": "comparison.tex", "csv": "comparison.csv",
                      "json": "comparison.json", "html": "comparison.html"}[fmt]).read_text(encoding="utf-8")
    assert printed.startswith(written)  # then the "wrote ..." line
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in written
    assert "\\x1b[2J" in written or fmt == "latex"  # LaTeX escapes the backslash once more
    if fmt == "json":
        assert json.loads(written)["systems"][1]["system"].startswith("sys\\x1b")


def test_compare_files_are_escaped_without_printing_them(hostile_systems, tmp_path):
    from clonebench.report.compare_render import write_comparison

    for path in write_comparison(["a", "b"], tmp_path, formats=("md", "html"), draws=100):
        text = path.read_text(encoding="utf-8")
        assert "\x1b" not in text and "\x07" not in text


# ------------------------------------------------------------------------------ 3. score: per-task lines


def _check(**counts):
    full = {"ids": 4, "usable": 4, "missing": 0, "unreadable": 0, "extra": 0, **counts}
    return SimpleNamespace(task="t", counts=lambda: full)


@pytest.mark.parametrize("counts,expected", [({}, "4/4 usable"), ({"usable": 2, "missing": 2},
                                                                       "2/4 usable, missing 2")])
def test_folder_tally_joins_only_present_parts(counts, expected):
    from clonebench.external.score_folders import _tally, tally_parts

    assert ", ".join(tally_parts(_check(**counts))) == expected
    assert _tally(_check(**counts)) == f"task t: {expected}"


@pytest.mark.parametrize("entry", [{"status": "not_scored", "means": {}, "run_dir": "t"},
                                   {"status": "partial", "means": {"sim": None, "wer": None}, "run_dir": "t"},
                                   {"status": "complete", "means": {}},
                                   {"status": "", "means": {"mcd": 5.25}, "run_dir": "t"}])
def test_score_task_lines_have_no_dangling_separator(entry):
    from clonebench.cli.score_cmd import task_line

    line = task_line(SimpleNamespace(model="m", out_dir=Path("out")), "task-a", entry)
    assert not re.search(r"(, |: )$|, ->|: ->|: :|, ,|  ", line), line
    assert line.startswith("m / task-a")


def test_score_task_line_with_values():
    from clonebench.cli.score_cmd import task_line

    line = task_line(SimpleNamespace(model="m", out_dir=Path("out")), "t",
                     {"status": "complete", "means": {"sim": 0.25, "wer": 0.125}, "run_dir": "r"})
    assert line == f"m / t: complete: sim 0.2500, wer 0.1250 -> {Path('out') / 'r'}"


# ------------------------------------------------------------------------------------- 4. subcommand help


def _usage_lines(doc: str) -> list[str]:
    return [line for line in (doc or "").splitlines() if line.startswith("    clonebench ")]


def test_every_subcommand_help_keeps_its_usage_lines(capsys):
    _, modules = build_parser()
    checked = 0
    for name in SUBCOMMANDS:
        lines = _usage_lines(modules[name].__doc__)
        with pytest.raises(SystemExit):
            cli([name, "--help"])
        shown = capsys.readouterr().out
        for line in lines:
            assert line.rstrip() in shown.splitlines(), f"{name} --help reflowed {line!r}"
        checked += bool(lines)
    assert checked >= 5


@pytest.mark.parametrize("name", ["score", "compare", "prompts", "report"])
def test_help_usage_lines_stay_on_lines_of_their_own(name, capsys):
    with pytest.raises(SystemExit):
        cli([name, "--help"])
    out = capsys.readouterr().out.splitlines()
    starts = [line for line in out if line.startswith(f"    clonebench {name} ")]
    assert len(starts) >= 2 or name == "report", out
    assert not any(line.count(f"clonebench {name} ") > 1 for line in out)


# -------------------------------------------------------------------------- 5. published rows are context


def _rows():
    def stat(mean):
        return {"mean": mean, "ci": [mean - 0.01, mean + 0.01], "n": 8, "n_requested": 8}

    return [{"name": "fast-run", "source": "run", "notes": [],
             "cells": {"sim": stat(0.41), "wer": stat(0.07), "mcd": stat(6.5)}},
            {"name": "slow-run", "source": "run", "notes": [],
             "cells": {"sim": stat(0.47), "wer": stat(0.09), "mcd": stat(7.5)}},
            {"name": "Oracle TTS (published)", "source": "paper", "notes": [],
             "cells": {"sim": {"mean": 0.93}, "wer": {"mean": 0.001}, "mcd": {"mean": 1.0}}}]


def _md_row(md: str, name: str) -> list[str]:
    line = next(line for line in md.splitlines() if line.startswith(f"| {name} |"))
    return [c.strip() for c in line.strip("|").split("|")][1:]


def test_best_is_among_runs_only():
    from clonebench.report.paper import best

    top = best(_rows())
    assert (top["sim"], top["wer"], top["mcd"]) == (0.47, 0.07, 6.5)


def test_markdown_bolds_runs_not_published_rows():
    from clonebench.report.paper import markdown

    md = markdown(_rows())
    assert not any("**" in c for c in _md_row(md, "Oracle TTS (published)"))
    fast, slow = _md_row(md, "fast-run"), _md_row(md, "slow-run")
    assert fast[1].startswith("**0.070") and fast[3].startswith("**6.500") and not fast[0].startswith("**")
    assert slow[0].startswith("**0.470") and not slow[1].startswith("**")
    lines = md.splitlines()
    label = next(k for k, line in enumerate(lines) if "published (other data)" in line)
    assert "**" not in lines[label]
    assert max(k for k, line in enumerate(lines) if line.startswith(("| fast-run", "| slow-run"))) \
        < label < next(k for k, line in enumerate(lines) if line.startswith("| Oracle TTS"))


def test_latex_bolds_runs_not_published_rows():
    from clonebench.report.paper import latex

    text = latex(_rows())
    published = next(line for line in text.splitlines() if line.startswith("Oracle TTS"))
    assert r"\textbf" not in published
    assert r"\textbf{0.470" in text and r"\textbf{0.070" in text and r"\textbf{6.500" in text
    assert re.search(r"\\midrule\n\\multicolumn\{\d+\}\{l\}\{\\textit\{published \(other data\)\}\} \\\\\nOracle", text)


def test_html_bolds_runs_not_published_rows():
    from clonebench.report.html_page import paper_table

    html = paper_table(_rows())
    runs, _, published = html.partition('<tbody class="published">')
    assert "published (other data)" in published and 'class="best"' not in published
    assert runs.count('class="best"') == 3


def test_a_table_of_published_rows_only_has_no_bold():
    from clonebench.report.paper import latex, markdown

    rows = [r for r in _rows() if r["source"] == "paper"]
    assert "**" not in markdown(rows).split("\n\n")[0] and r"\textbf" not in latex(rows)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "fast", ""])
def test_listening_serve_refuses_a_rate_limit_that_is_not_a_positive_number(value, tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        cli(["listening-serve", str(tmp_path), "--rate-limit", value])
    assert exited.value.code == 2
    assert f"--rate-limit: {value!r} is not a positive number of requests a second" in _error(capsys)
