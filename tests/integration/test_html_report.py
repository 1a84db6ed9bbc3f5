"""The HTML report (clonebench report --format html) opened in a real headless Chromium (Debian's chromium,
driven by Playwright for Python): runs made here against the stand-in and scored with real models."""

from __future__ import annotations

import json
import shutil

import pytest

from clonebench.cli.main import main as cli
from clonebench.runs.pipeline import run
from clonebench.standin import running_standin
from tests.conftest import compose
from tests.report_browser import column, header_right_edges, open_report, page_overflow

HOSTILE_TEXT = "Glue the sheet <script>window.__pwned = 1</script> to the dark blue background."
HOSTILE_LABEL = "A</script><!-- <b>run"
COMMON = ["evaluation.whisper.backend=faster_whisper", "evaluation.whisper.model=tiny.en",
          "evaluation.whisper.allow_hub=false", "evaluation.ecapa.allow_hub=false", "adversary.max_samples=4",
          "adversary.retry_initial_delay=0.01", "adversary.reference_check=false", "evaluation.metrics=[sim,wer]"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, demo_dataset):
    tmp = tmp_path_factory.mktemp("html")
    data = tmp / "data"
    shutil.copytree(demo_dataset, data)
    metadata = json.loads((data / "metadata.json").read_text())
    metadata["pairs"][0]["target_text"] = HOSTILE_TEXT  # an untrusted manifest transcript
    (data / "metadata.json").write_text(json.dumps(metadata))
    out = {}
    with running_standin(max_lifetime=600) as server:
        for name, seed in (("a", 42), ("b", 7)):
            cfg = compose("demo", [f"paths.results_dir={tmp / 'results'}", f"run_name=run_{name}",
                                   f"dataset.manifest_filename={data / 'metadata.json'}", f"dataset.root_path={data}",
                                   f"adversary.endpoint_url={server.url}/v1/tts", f"+seed={seed}", *COMMON])
            run(cfg, tmp / "results" / name, "test")
            out[name] = tmp / "results" / name
    return out


@pytest.mark.slow
def test_single_run_page_is_self_contained_sortable_and_escaped(runs, tmp_path):
    out = tmp_path / "report"
    assert cli(["report", str(runs["a"]), "--format", "html", "--output", str(out), "--copy-audio", "--with-paper"]) == 0
    page, seen, close = open_report(out / "index.html")
    try:
        assert seen["errors"] == [] and seen["blocked"] == []
        inside = out.resolve().as_uri() + "/"
        assert seen["requests"] and all(u.startswith(inside) for u in seen["requests"]), seen["requests"]
        states = page.evaluate("Array.from(document.querySelectorAll('audio')).map(a => a.readyState)")
        assert len(states) == 4 * 3 and min(states) >= 2  # prompt, target, generated per pair
        page.click("#samples-table th[data-key='sim']")
        ascending = column(page, "sim")
        assert len(ascending) == 4 and ascending == sorted(ascending)
        page.click("#samples-table th[data-key='sim']")
        assert column(page, "sim") == sorted(ascending, reverse=True)
        page.click("#worst-wer")
        wer = column(page, "wer")
        assert wer == sorted(wer, reverse=True)
        page.click("#worst-sim")
        assert column(page, "sim") == ascending
        # the hostile transcript is text: no script ran, and the page shows the characters
        assert page.evaluate("window.__pwned") is None
        assert page.locator("#samples-table .ref", has_text="<script>window.__pwned = 1</script>").count() == 1
        assert page.locator("#samples-table del, #samples-table ins").count() > 0  # word differences marked
        page.select_option("#speaker", "1002")
        speakers = page.evaluate("""Array.from(document.querySelectorAll('#samples-table tbody tr'))
                                    .filter(r => !r.hidden).map(r => r.dataset.speaker)""")
        assert speakers == ["1002", "1002"]
        # the run, then the paper's 22 v3 rows apart under their label (context, never bold)
        assert page.locator("table.paper tbody:not(.published) tr").count() == 1
        assert page.locator("table.paper tbody.published tr.published-label").count() == 1
        assert page.locator("table.paper tbody.published tr:not(.published-label)").count() == 22
        assert page.locator("table.paper tbody.published strong, table.paper tbody.published b").count() == 0
    finally:
        close()


@pytest.mark.slow
def test_two_runs_side_by_side_with_relative_audio(runs, tmp_path):
    out = tmp_path / "ab"
    assert cli(["report", str(runs["a"]), str(runs["b"]), "--format", "html", "--output", str(out),
                "--label", HOSTILE_LABEL, "--label", "B"]) == 0
    assert not (out / "audio").exists()
    html = (out / "index.html").read_text()
    config = html.split('<script type="application/json" id="report-config">')[1].split("</script>")[0]
    assert "<" not in config and json.loads(config)["runs"][0]["label"] == HOSTILE_LABEL
    page, seen, close = open_report(out / "index.html")
    try:
        assert seen["errors"] == [] and seen["blocked"] == []
        assert all(u.startswith("file:///") for u in seen["requests"])
        audio = [u for u in seen["requests"] if u.endswith(".wav")]
        assert any(u.startswith((runs["a"].resolve() / "generated_audio").as_uri()) for u in audio)
        assert any(u.startswith((runs["b"].resolve() / "generated_audio").as_uri()) for u in audio)
        assert page.locator("#samples-table tbody tr .ab audio").count() == 4 * 2  # A/B per pair
        paired = page.evaluate("Array.from(document.querySelectorAll('table.paired tbody tr')).map(r => r.cells[0].textContent)")
        assert paired == ["sim", "sva", "wer"]  # the ECAPA scorer yields SIM and SVA
        # one interval per quantity: each paired Δ's CI is the Comparison's B − A interval (studentized speaker-
        # cluster bootstrap), the speakers too few for a claim said beside it
        paired_ci = page.evaluate("Array.from(document.querySelectorAll('table.paired tbody tr')).map(r => r.cells[5].textContent)")
        compared_ci = page.evaluate("""Array.from(document.querySelectorAll('#comparison table.comparison'))
            .filter(t => t.tHead.rows[0].cells[0].textContent === 'B − A').map(t => t.tBodies[0].rows[0].cells[3].textContent)""")
        assert [ci for ci in paired_ci if ci != "– (not compared)"] == compared_ci and len(compared_ci) == 2
        assert paired_ci[1] == "– (not compared)"  # SVA: scored, but not a requested metric of both runs
        assert all("speakers: too few to support a claim" in ci for ci in compared_ci)
        assert "studentized speaker-cluster bootstrap" in page.locator("#paired + p").text_content()
        assert page.title().startswith("clonebench report: " + HOSTILE_LABEL)
        assert page.evaluate("document.querySelectorAll('b').length") == 0  # the label stayed text
    finally:
        close()


@pytest.mark.slow
@pytest.mark.parametrize("order", [("a", "b"), ("a", "b", "a")])
def test_wide_comparisons_scroll_in_their_own_box_at_1280_px(runs, tmp_path, order):
    """The samples table of two (or three) runs is wider than a 1,280 px window: it scrolls in its own box, the page
    does not, and with two runs the B−A deltas are the first numbers, on screen without scrolling."""
    out = tmp_path / "wide"
    labels = [a for k, _ in enumerate(order) for a in ("--label", f"run {k}")]
    assert cli(["report", *(str(runs[name]) for name in order), "--format", "html", "--output", str(out),
                *labels]) == 0
    page, seen, close = open_report(out / "index.html", width=1280)
    try:
        assert seen["errors"] == []
        assert page.evaluate("document.querySelector('#samples-table').scrollWidth") > 1280  # wider than the window
        assert page_overflow(page) <= 0
        if len(order) == 2:
            deltas = header_right_edges(page, "Δ")
            assert len(deltas) == 3 and max(deltas) <= 1280  # ΔSIM, ΔSVA and ΔWER in view
    finally:
        close()


@pytest.mark.slow
def test_failures_column_badges_and_filter(runs, tmp_path):
    """Run A's rows given failure verdicts (as the failures scorer writes them): the page opens worst first, a badge
    shows the flag's rule on hover, and the filter keeps only the failed (or one flag's) rows."""
    import csv

    from clonebench.failures.rates import failure_rates
    from clonebench.failures.thresholds import describe

    run_dir = tmp_path / "run_a"
    shutil.copytree(runs["a"], run_dir)
    sample_csv = run_dir / "generation_sample_metrics.csv"
    with open(sample_csv, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        fields, rows = list(reader.fieldnames) + ["fail", "failures", "failure_detail"], list(reader)
    verdicts = ["", "truncated", "", "silent;looping"]
    for row, flags in zip(rows, verdicts):
        row.update(fail=1.0 if flags else 0.0, failures=flags, failure_detail="")
    with open(sample_csv, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    metrics["failure_modes"] = failure_rates(rows)
    metrics["metrics"]["fail"] = {"mean": 0.5, "ci": [0.0, 1.0], "n_valid": 4, "n_requested": 4}
    (run_dir / "metrics.json").write_text(json.dumps(metrics))
    out = tmp_path / "report"
    assert cli(["report", str(run_dir), "--format", "html", "--output", str(out)]) == 0
    page, seen, close = open_report(out / "index.html")
    try:
        assert seen["errors"] == []
        ids = ("Array.from(document.querySelectorAll('#samples-table tbody tr')).filter(r => !r.hidden)"
               ".map(r => r.cells[0].dataset.v)")
        pair_ids = [r["pair_id"] for r in rows]
        assert page.evaluate(ids) == [pair_ids[3], pair_ids[1], pair_ids[0], pair_ids[2]]  # worst first
        assert column(page, "failures") == [2.0, 1.0, 0.0, 0.0]
        assert page.locator("#samples-table .badge[data-flag='silent']").get_attribute("title") == describe("silent")
        assert "2 of 4 utterances, 50.0 %" in page.locator(".failure-summary").text_content()
        assert "fail%↓" in page.locator("table.paper thead").text_content()
        page.select_option("#failure-filter", "*")
        assert page.evaluate(ids) == [pair_ids[3], pair_ids[1]]
        page.select_option("#failure-filter", "truncated")
        assert page.evaluate(ids) == [pair_ids[1]]
    finally:
        close()
