"""The failure rate (``fail``) wherever results are shown, on synthetic rows: the paper tables (fail% x100 with one
decimal, lower is better, absent for old runs), the N-system comparison (paired, Holm-adjusted, Δ in percentage
points), the historical comparison, the suite tables and the HTML report's failures cells and summary."""

from __future__ import annotations

from html import escape
from types import SimpleNamespace

import numpy as np
import pytest

from clonebench.failures.thresholds import describe
from clonebench.report.tables import ResultTable

PAIRS = 12
FAIL_A = {1, 5}               # 2 of 12 fail
FAIL_B = {1, 2, 3, 5, 7, 9}   # 6 of 12 fail (a superset of A's)


def _summary(mean, ci, n=8):
    return {"mean": mean, "ci": ci, "n_valid": n, "n_requested": n}


# ------------------------------------------------------------------------------------------------- paper tables


def _modes(failed: int, n: int = 8) -> dict:
    from clonebench.failures.rates import failure_rates

    return failure_rates([{"fail": 1.0 if k < failed else 0.0, "failures": ""} for k in range(n)])


def _paper_rows(with_old: bool = True):
    """Two runs whose metrics.json holds the utterance bootstrap of fail (collapsing, and not what a page shows)
    beside failure_modes' Wilson interval (what every format shows)."""
    from clonebench.report.paper import run_rows

    tables = [ResultTable("good", [], status="complete", failure_modes=_modes(1),
                          metrics_summary={"sim": _summary(0.61, [0.6, 0.62]), "fail": _summary(0.125, [0.0, 0.375])}),
              ResultTable("bad", [], status="complete", failure_modes=_modes(2),
                          metrics_summary={"sim": _summary(0.65, [0.64, 0.66]), "fail": _summary(0.25, [0.0, 0.5])})]
    if with_old:  # scored before failure modes existed: no ``fail``
        tables.append(ResultTable("old", [], status="complete", metrics_summary={"sim": _summary(0.5, [0.4, 0.6])}))
    return run_rows(tables)


def test_paper_markdown_shows_fail_percent_lower_is_better_and_nothing_for_old_runs():
    from clonebench.report.paper import markdown

    lines = markdown(_paper_rows()).splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[-1] == "fail%↓"
    good, bad, old = ([c.strip() for c in line.strip("|").split("|")] for line in lines[2:5])
    assert _modes(1)["ci"] == pytest.approx([0.022417, 0.470888], abs=1e-6)  # Wilson, 1 of 8
    assert good[0] == "good" and good[-1] == "**12.5 [2.2, 47.1] (n=8/8)**"   # the lower rate is the best
    assert bad[-1] == "25.0 [7.1, 59.1] (n=8/8)"
    assert "fail%: 95 % Wilson score interval" in "\n".join(lines)  # said under the table
    assert old[-1] == "–"
    assert bad[1].startswith("**0.650")                                        # SIM: higher is still better


def test_paper_tables_without_fail_have_no_fail_column():
    from clonebench.report.paper import csv_text, latex, markdown, run_rows

    rows = run_rows([ResultTable("old", [], status="complete", metrics_summary={"sim": _summary(0.5, [0.4, 0.6])})])
    assert "fail" not in markdown(rows) and "fail" not in latex(rows) and "fail" not in csv_text(rows)


def test_paper_latex_and_csv_of_fail():
    from clonebench.report.paper import csv_text, latex

    text = latex(_paper_rows(with_old=False))
    assert r"fail\%$\downarrow$ \\" in text
    assert r"\textbf{12.5\,{\scriptsize[2.2, 47.1]}}" in text and r"25.0\,{\scriptsize[7.1, 59.1]}" in text
    rows = csv_text(_paper_rows()).splitlines()
    header = rows[0].split(",")
    at = header.index("fail")
    assert header[at:at + 4] == ["fail", "fail_ci_low", "fail_ci_high", "fail_n"]
    assert rows[1].split(",")[at:at + 4] == ["0.125", "0.022417", "0.470888", "8"]  # the CSV keeps the rate itself
    assert rows[3].split(",")[at:at + 4] == ["", "", "", ""]


def test_v3_table_puts_fail_after_its_columns():
    from clonebench.report.paper import markdown
    from clonebench.report.paper_v3 import COLUMNS_V3

    header = markdown(_paper_rows(), COLUMNS_V3).splitlines()[0]
    assert header.rstrip(" |").endswith("DNSMOS↑ | fail%↓")


# ------------------------------------------------------------------------------------------ N-system comparison


def _system(label: str, failed: set[int], with_fail: bool = True):
    from clonebench.report.systems import System

    rng = np.random.default_rng(3)
    rows = [{"sample_id": f"p{k}", "pair_id": f"p{k}", "speaker_id": f"s{k % 6}",
             "sim": float(0.5 + rng.normal(0, 0.05)), **({"fail": 1.0 if k in failed else 0.0} if with_fail else {})}
            for k in range(PAIRS)]
    metrics = ("sim", "fail") if with_fail else ("sim",)
    summary = {m: {"mean": float(np.mean([r[m] for r in rows])), "n_valid": PAIRS, "n_requested": PAIRS}
               for m in metrics}
    table = ResultTable(label=label, rows=rows, status="complete", metrics_summary=summary)
    return System(label, [table], [{"ecapa": {"fingerprint": "e" * 64}, "failures": {"fingerprint": "f" * 64}}])


def test_compare_systems_compares_failure_rates_paired_with_holm():
    from clonebench.report.multi_compare import compare_systems
    from clonebench.stats.holm import holm

    systems = [_system("A", FAIL_A), _system("B", FAIL_B), _system("C", set())]
    result = compare_systems(systems, draws=300)
    assert list(result["metrics"]) == ["sim", "fail"]           # by default: every metric all runs scored
    entry = result["metrics"]["fail"]
    assert entry["higher_is_better"] is False
    assert [s["mean"] for s in entry["systems"]] == pytest.approx([2 / 12, 6 / 12, 0.0])
    assert entry["best"] == 0.0                                  # the lowest failure rate
    ab, ac = entry["comparisons"]
    assert (ab["a"], ab["b"], ac["b"]) == ("A", "B", "C")
    assert ab["delta"] == pytest.approx(4 / 12) and ac["delta"] == pytest.approx(-2 / 12)
    assert ab["wins"] == {"b_wins": 0, "a_wins": 4, "ties": 8}   # B fails where A does not on 4 pairs
    assert ac["wins"] == {"b_wins": 2, "a_wins": 0, "ties": 10}
    assert [ab["p_holm"], ac["p_holm"]] == pytest.approx(holm([ab["p_value"], ac["p_value"]]))
    assert ab["verdict"] != "no pairs in common"


def test_compare_renders_fail_in_percent_and_percentage_points():
    from clonebench.report.compare_render import csv_text, latex, markdown
    from clonebench.report.multi_compare import compare_systems

    result = compare_systems([_system("A", FAIL_A), _system("B", FAIL_B)], metrics=["fail"], draws=300)
    c = result["metrics"]["fail"]["comparisons"][0]
    text = markdown(result)
    assert "## fail% ↓" in text
    assert "| A | 1 | 12 | **16.7** | [" in text and "| B | 1 | 12 | 50.0 | [" in text
    lo, hi = c["ci"]
    assert f"| B − A | 12 | +33.3 | [{100 * lo:+.1f}, {100 * hi:+.1f}] (only {c['speakers']} speakers: too few to " \
           "support a claim) |" in text  # said beside the interval, in every format
    assert "percentage points" in text
    assert r"\textbf{16.7}" in latex(result) and "+33.3" in latex(result)
    assert f"only {c['speakers']} speakers: too few to support a claim" in latex(result)
    row = next(r for r in csv_text(result).splitlines() if r.startswith("fail,comparison"))
    assert f",{4 / 12}," in row                                  # the CSV keeps the difference of rates


def test_compare_leaves_out_fail_when_a_run_lacks_it():
    from clonebench.core.errors import ClonebenchError
    from clonebench.report.multi_compare import compare_systems

    systems = [_system("A", FAIL_A), _system("old", set(), with_fail=False)]
    assert list(compare_systems(systems, draws=100)["metrics"]) == ["sim"]
    with pytest.raises(ClonebenchError, match="fail"):
        compare_systems(systems, metrics=["fail"], draws=100)


def test_historical_compare_adds_fail_when_both_sides_have_it():
    from clonebench.report.compare import PAIRED_METRICS, compare, default_metrics

    def table(label, failed, with_fail=True):
        rows = [{"pair_id": f"p{k}", "speaker_id": f"s{k % 6}", "mcd": 5.0 + k / 10, "wer": 0.1, "sim": 0.5,
                 **({"fail": str(float(k in failed))} if with_fail else {})} for k in range(PAIRS)]
        return ResultTable(label, rows)

    current, historical = table("now", FAIL_B), table("then", FAIL_A)
    assert default_metrics(current, historical) == (*PAIRED_METRICS, "fail")
    assert default_metrics(current, table("old", set(), with_fail=False)) == PAIRED_METRICS
    result = compare(current, historical)
    fail = result["metrics"]["fail"]
    assert fail["current_mean"] == pytest.approx(0.5) and fail["historical_mean"] == pytest.approx(2 / 12)
    assert fail["paired_mean_delta"] == pytest.approx(4 / 12)
    alone = compare(current, historical, PAIRED_METRICS)          # the conventions' metrics are unchanged by it
    assert {m: result["metrics"][m] for m in PAIRED_METRICS} == alone["metrics"]


# ------------------------------------------------------------------------------------------------- suite tables


def test_suite_tables_show_fail_per_task_only_where_scored():
    from clonebench.suite.results import MetricStat, TaskResult
    from clonebench.suite.tables import FAILURE, cell, latex, used_metrics

    task = SimpleNamespace(name="libritts", evaluation="standard")
    scored = TaskResult(task, ("sim",), "complete",
                        metrics={"sim": MetricStat(0.6, [0.55, 0.65], 8, 8), "fail": MetricStat(0.125, [0.05, 0.25], 8, 8)})
    old = TaskResult(task, ("sim",), "complete", metrics={"sim": MetricStat(0.6, [0.55, 0.65], 8, 8)})
    assert used_metrics(SimpleNamespace(tasks=[scored, old]))[-1] == FAILURE == ("fail", "fail%", False)
    assert used_metrics(SimpleNamespace(tasks=[old])) == [("sim", "SIM", True)]
    assert cell(scored, "fail") == "12.5 [5.0, 25.0] (8/8)"
    assert cell(old, "fail") == ""
    assert cell(scored, "sim") == "0.600 [0.550, 0.650] (8/8)"
    suite = SimpleNamespace(name="s", suite_sha256="x", hf_dataset_id="d", hf_revision="r")
    text = latex(SimpleNamespace(suite=suite, model="m", tasks=[scored, old]))
    assert r"SIM $\uparrow$ & fail\% $\downarrow$ \\" in text                 # % escaped: not a comment
    assert r"libritts & complete & 0.600\,{\scriptsize[0.550, 0.650]} & 12.5\,{\scriptsize[5.0, 25.0]} \\" in text


# -------------------------------------------------------------------------------------------------- HTML report


def test_failures_cell_badges_with_the_flag_rule_on_hover():
    from clonebench.report.html_rows import _failure_cell

    html, score = _failure_cell({"fail": "1.0", "failures": "looping;silent",
                                 "failure_detail": "silent: 0.1 s vs 0.3 s | looping: 2.0 s vs 1.2 s"})
    assert score == 2 and 'data-v="2"' in html
    assert html.index(">silent<") < html.index(">looping<")          # the flags' order
    assert f'title="{escape(describe("silent"))}"' in html and "Silero VAD shorter than 0.3 s" in describe("silent")
    ok = '<td class="failures" data-v="0"><span class="ok">ok</span></td>'
    assert _failure_cell({"fail": "0.0", "failures": ""}) == (ok, 0)
    assert _failure_cell({"sim": "0.5"})[1] is None                    # no verdict (an old run): no value


def test_failure_summary_line_from_failure_modes():
    from clonebench.report.html_rows import failure_summary_html

    flags = {"silent": {"count": 1, "rate": 0.025, "ci": [0.004, 0.129]}, "looping": {"count": 0, "rate": 0.0,
                                                                                       "ci": [0.0, 0.088]}}
    modes = {"n": 40, "failed": 3, "rate": 0.075, "ci": [0.026, 0.199], "flags": flags,
             "ci_method": "Wilson score interval, 95%"}
    view = SimpleNamespace(table=ResultTable("run", [], failure_modes=modes), samples={}, label="run")
    text = failure_summary_html([view])
    assert "Failures (run): 3 of 40 utterances, 7.5 % [2.6, 19.9] (Wilson score interval, 95%)" in text
    assert ">silent</span> 1 (2.5 % [0.4, 12.9])" in text and "looping" not in text
    old = SimpleNamespace(table=ResultTable("old", []), samples={"p0": {"sim": "0.5"}}, label="old")
    assert failure_summary_html([old]) == ""


def test_the_run_summary_printed_after_scoring_shows_fails_wilson_interval():
    from clonebench.runs.pipeline import results_table

    modes = _modes(0)  # none of 8 failed: the bootstrap collapses to [0, 0], Wilson does not
    metrics = {"metrics": {"fail": _summary(0.0, [0.0, 0.0]), "sim": _summary(0.6, [0.5, 0.7])}, "failure_modes": modes}
    fail, sim = (line for line in results_table(metrics).splitlines()[1:])
    assert fail.split()[:4] == ["fail", "0.0000", "[0.0000,", f"{modes['ci'][1]:.4f}]"] and modes["ci"][1] > 0.3
    assert "[0.5000, 0.7000]" in sim  # every other metric: its utterance bootstrap
