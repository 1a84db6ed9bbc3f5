"""The README's two commands: `make demo` runs the offline demo end to end; `make test` is what CI runs."""

from __future__ import annotations

import json
import re
import subprocess

from tests.conftest import REPO
from tests.report_browser import column, open_report


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = re.search(r"```sh\n(.*?)```", text, re.S).group(1)
    return [line.strip() for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_readme_has_exactly_the_two_commands_and_ci_runs_the_test_one():
    assert readme_commands() == ["make demo", "make test"]
    assert "make test" in (REPO / ".ci" / "run").read_text()


def test_make_demo_generates_every_pair(tmp_path):
    result = subprocess.run(["make", "demo", f"DEMO_ARGS=--results {tmp_path}"], cwd=REPO, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    runs = sorted((tmp_path / "demo").glob("2*-*"))
    assert len(runs) == 1
    manifest = json.loads((runs[0] / "run_manifest.json").read_text())
    assert manifest["status"] == "generated" and manifest["counts"] == {"generated": 8}
    assert manifest["reference_check"]["status"] == "passed"
    assert len(list((runs[0] / "generated_audio").rglob("*.wav"))) == 8
    assert (runs[0] / "run_vc.log").is_file() and (runs[0] / ".hydra" / "config.yaml").is_file()
    assert f"run generated: {runs[0]}" in result.stdout
    metrics = json.loads((runs[0] / "metrics.json").read_text())
    assert metrics["status"] == "complete" and set(metrics["metrics"]) == {"sim", "sva", "wer", "mcd", "dnsmos"}
    assert f"evaluation complete on cpu: {runs[0]}" in result.stdout
    assert re.search(r"^sim +0\.\d{4} +\[0\.\d{4}, 0\.\d{4}\] +8/8", result.stdout, re.M)
    page_path = runs[0] / "report" / "index.html"
    assert f"HTML report: {page_path}" in result.stdout
    page, seen, close = open_report(page_path)  # the browser test of the HTML report, on the demo's run
    try:
        assert seen["errors"] == [] and seen["blocked"] == []
        assert page.locator("#samples-table tbody tr").count() == 8
        assert page.locator("#samples-table audio").count() == 8 * 3
        page.click("#worst-sim")
        sim = column(page, "sim")
        assert len(sim) == 8 and sim == sorted(sim)
    finally:
        close()
