"""The RTF column: a quality run and a timing run (adversary.measure=ttfb) of the same pairs and server, made
here against the stand-in, combine in `clonebench report`; a quality run alone never yields an RTF."""

from __future__ import annotations

import argparse
import re

import pytest

from clonebench.cli.main import main as cli
from clonebench.cli.report_cmd import add_arguments
from clonebench.cli.report_cmd import run as report
from clonebench.core.errors import ClonebenchError
from clonebench.report.rtf import load_timing
from clonebench.runs.pipeline import run
from clonebench.standin import running_standin
from tests.conftest import compose, generate_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory, demo_dataset):
    tmp = tmp_path_factory.mktemp("rtf")
    out = {}
    with running_standin(latency=0.2, max_lifetime=600) as server:
        cfg = compose("demo", [f"paths.results_dir={tmp / 'results'}", "run_name=quality",
                               f"dataset.manifest_filename={demo_dataset / 'metadata.json'}",
                               f"dataset.root_path={demo_dataset}", f"adversary.endpoint_url={server.url}/v1/tts",
                               "adversary.reference_check=false", "adversary.max_samples=3", "evaluation.metrics=[mcd]",
                               "adversary.retry_initial_delay=0.5", "adversary.retry_max_delay=0.5"])
        server.faults.add([{"kind": "status", "code": 503}])  # the quality run's first request is retried
        run(cfg, tmp / "results" / "quality", "test")
        out["quality"] = tmp / "results" / "quality"
        server.faults.add([{"kind": "status", "code": 503}])  # and one timing sample too
        for name, count in (("timing", 3), ("other_pairs", 2)):
            _, out[name] = generate_run(tmp, demo_dataset, server.url, "adversary.measure=ttfb",
                                        f"adversary.max_samples={count}", "adversary.reference_check=false",
                                        run_dir=tmp / "results" / name)
    with running_standin(latency=0.2, max_lifetime=600) as other:  # same pairs, another server
        _, out["other_server"] = generate_run(tmp, demo_dataset, other.url, "adversary.measure=ttfb",
                                              "adversary.max_samples=3", "adversary.reference_check=false",
                                              run_dir=tmp / "results" / "other_server")
    return out


def _rtf_cell(md: str, name: str) -> str:
    header = next(line for line in md.splitlines() if line.startswith("| model |"))
    row = next(line for line in md.splitlines() if line.startswith(f"| {name} |"))
    titles = [c.strip() for c in header.strip("|").split("|")]
    return [c.strip() for c in row.strip("|").split("|")][titles.index("RTF↓")]


@pytest.mark.slow
def test_timing_run_fills_the_rtf_column(runs, capsys):
    timing = load_timing(runs["timing"])
    samples = timing["samples"]
    expected = sum(s["synthesis_time_s"] for s in samples) / sum(s["duration_s"] for s in samples)
    assert [s["attempts"] for s in samples].count(2) == 1 and expected > 0.2 / max(s["duration_s"] for s in samples)
    assert cli(["report", str(runs["quality"]), str(runs["timing"]), "--format", "md", "--with-paper"]) == 0
    md = capsys.readouterr().out
    assert _rtf_cell(md, "quality").strip("*") == f"{expected:.3f} (n=3/3)"  # bold: v3 has no published RTF
    assert "RTF (quality) = Σ request time / Σ audio seconds" in md and "1 retried sample(s)" in md
    assert md.count(" (published) |") == 22  # the paper's v3 rows, with the RTF column kept after them
    # the quality run alone: no RTF, although its manifest has (retry-inflated) request times
    assert cli(["report", str(runs["quality"]), "--format", "md"]) == 0
    assert _rtf_cell(capsys.readouterr().out, "quality") == "–"


@pytest.mark.slow
def test_timing_run_of_other_pairs_or_server_is_refused(runs, capsys):
    for name, why in (("other_pairs", "pairs (input fingerprint)"), ("other_server", "server endpoint_urls")):
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        with pytest.raises(ClonebenchError, match=r"matches no quality run given \(quality: .*" + re.escape(why)):
            report(parser.parse_args([str(runs["quality"]), str(runs[name])]))


@pytest.mark.slow
def test_rtf_in_the_html_report(runs, tmp_path):
    assert cli(["report", str(runs["quality"]), str(runs["timing"]), "--format", "html", "--output", str(tmp_path)]) == 0
    html = (tmp_path / "index.html").read_text()
    assert "RTF (quality) = Σ request time / Σ audio seconds" in html
