"""The paper's v3 table in `clonebench report`: published v3 rows by default (v2 on request), and a suite run as
one row whose VCTK, Chinese and cross-lingual SIM columns come from its tasks."""

from __future__ import annotations

import pytest

from clonebench.cli.main import main as cli
from tests.unit.test_suite_results import fake_suite

V3_TASKS = ["english-libritts", "audioshift", "chinese", "crosslingual"]


def _row(md: str, start: str) -> dict:
    header = next(line for line in md.splitlines() if line.startswith("| model |"))
    row = next(line for line in md.splitlines() if line.startswith(f"| {start}"))
    titles = [c.strip() for c in header.strip("|").split("|")]
    return dict(zip(titles, [c.strip() for c in row.strip("|").split("|")]))


@pytest.fixture(scope="module")
def suite_run(tmp_path_factory):
    return fake_suite(tmp_path_factory.mktemp("v3"), "fish-s2", 3, tasks=V3_TASKS)


def test_a_suite_run_fills_the_v3_columns(suite_run, capsys):
    from clonebench.suite.results import load_suite_results

    suite_dir, _ = suite_run
    results = load_suite_results(suite_dir)
    assert cli(["report", str(suite_dir), "--format", "md", "--with-paper"]) == 0
    md = capsys.readouterr().out
    row = _row(md, "fish-s2 [core-v1]")
    for column, task in (("SIM↑", "english-libritts"), ("VCTK SIM↑", "audioshift"), ("Chinese SIM↑", "chinese"),
                         ("Cross-lingual SIM↑", "crosslingual")):
        stat = results.task(task).metrics["sim"]
        cell = row[column].strip("*")  # the only measured row: bold (published rows are never competitors)
        assert cell.startswith(f"{stat.mean:.3f}") and f"(n={stat.n_valid}/{stat.n_requested})" in cell
    assert row["MOS↑"].endswith("†")  # the UTMOS scorer is marked unverified
    assert row["RTF↓"] == "–"
    assert "vctk_sim: suite core-v1 task audioshift" in md
    assert md.count(" (published) |") == 22
    published = _row(md, "Fish Audio S2 † (published)")
    assert (published["SIM↑"], published["Chinese SIM↑"], published["Cross-lingual SIM↑"]) == ("0.540", "0.660", "0.620")
    assert "arXiv v3" in md


def test_paper_v2_on_request(suite_run, capsys):
    suite_dir, _ = suite_run
    assert cli(["report", str(suite_dir), "--format", "md", "--with-paper", "--paper-version", "v2"]) == 0
    md = capsys.readouterr().out
    assert md.count(" (published) |") == 18 and "VCTK SIM" not in md and "Fish Audio S2" not in md
    assert cli(["report", str(suite_dir), "--format", "latex", "--with-paper"]) == 0
    assert r"VCTK SIM$\uparrow$" in capsys.readouterr().out


def test_suite_html_page(suite_run, tmp_path, capsys):
    suite_dir, _ = suite_run
    assert cli(["report", str(suite_dir), "--format", "html", "--output", str(tmp_path / "r"), "--with-paper"]) == 0
    page = (tmp_path / "r" / "index.html").read_text()
    assert "Suite core-v1: fish-s2" in page and "Cross-lingual SIM↑" in page and "worst first" in page
    assert "<script" not in page  # a page of suite runs only: no per-sample table, no script
