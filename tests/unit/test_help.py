"""``clonebench --help`` and every subcommand's ``--help`` print their help, and ``scripts/*.py --help`` prints help
and changes nothing (issue: a bare '%' in one subcommand's help crashed the top-level ``--help``; ``demo.py --help``
rebuilt the demo dataset)."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys

import pytest

from clonebench.cli.main import SUBCOMMANDS, build_parser, main
from tests.conftest import REPO, files_under

SCRIPTS = sorted(p.name for p in (REPO / "scripts").glob("*.py"))


def test_top_level_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: clonebench")
    for name, (_, help_text) in SUBCOMMANDS.items():
        assert name in out
    assert "WER (%)" in out  # a literal '%' is shown as written, not %-formatted


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_every_subcommand_help(name, capsys):
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: clonebench {name}") and "-h, --help" in out


def test_every_argument_help_formats():
    """Every action's help string of every parser goes through argparse's %-formatting without error (the class of
    the crash, for options added later too)."""
    parser, _ = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for each in [parser, *sub.choices.values()]:
        formatter = each._get_formatter()
        actions = each._actions + (sub._choices_actions if each is parser else [])  # the subcommands' own help
        for action in actions:
            if action.help not in (None, argparse.SUPPRESS):
                formatter._expand_help(action)


@pytest.fixture(scope="module")
def scripts_copy(tmp_path_factory):
    """A copy of scripts/ beside links to src/, configs/ and run_vc.py: a script's REPO is this folder, so whatever
    it would write under the repository lands here and is seen."""
    root = tmp_path_factory.mktemp("repo")
    shutil.copytree(REPO / "scripts", root / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("src", "configs", "reproduction", "run_vc.py"):
        (root / name).symlink_to(REPO / name)
    return root


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_help_prints_help_and_changes_nothing(script, scripts_copy):
    before = files_under(scripts_copy)
    done = subprocess.run([sys.executable, f"scripts/{script}", "--help"], cwd=scripts_copy, capture_output=True,
                          text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "src"),
                                                       "HOME": str(scripts_copy), "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage: ") and "--help" in done.stdout, done.stdout[:500]
    assert files_under(scripts_copy) == before


def test_a_closed_pipe_stops_a_command_quietly():
    """``clonebench manifest ... | head``: when the reader has gone, the command stops with 141 and no traceback."""
    import os

    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte: every write fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "clonebench.cli.main", "manifest",
                               "reproduction/subsets/libritts16_v1/metadata.json"], cwd=REPO, stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    finally:
        os.close(write)
    assert done.returncode == 141 and "Traceback" not in done.stderr, done.stderr[-2000:]
