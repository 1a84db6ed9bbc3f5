"""Suite results from task runs (written here as an evaluated run would write them, with known values): coverage,
means, group means and relative change equal rvcbench's own functions on the same rows; the paired change against
an anchor is exact on known deltas; tasks without shared pairs and derived tasks say why they have no paired change
or scores; the tables, the HTML section (worst first) and submission.json, which rvcbench's compare reads."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from clonebench.evaluate.outputs import COLUMNS
from clonebench.suite.definition import UPSTREAM_METRICS, load_suite
from clonebench.suite.rows import task_rows

CORE_TASKS = ["background", "textshift-hallucination", "audioshift", "compression-mp3-64k", "textshift-scam"]


def _value(metric: str, rng) -> float:
    return {"sim": rng.uniform(0.3, 0.8), "sva": float(rng.integers(0, 2)), "wer": rng.uniform(0, 0.4),
            "mcd": rng.uniform(4, 9), "speechmos": rng.uniform(2.5, 4.5), "emotion": float(rng.integers(0, 2)),
            "stoi": rng.uniform(0.6, 0.99), "dnsmos": rng.uniform(2, 4)}[metric]


def write_task_run(task_dir: Path, suite, task, values, failed=(), missing=()):
    """An evaluated task run: run_manifest.json, sample CSV, metrics.json, scoring_manifest.json."""
    rows = task_rows(suite, task)
    task_dir.mkdir(parents=True)
    samples, csv_rows = [], []
    for row in rows.rows:
        pair = row["pair_id"]
        status = "generation_failed" if pair in failed else "generated"
        samples.append({"sample_id": pair, "pair_id": pair, "speaker_id": row["speaker_id"], "status": status,
                        "audio_sha256": None if pair in failed else f"{abs(hash(pair)):064x}"[:64],
                        **({"error": "HTTP 500 No audio generated"} if pair in failed else {})})
        cells = {"sample_id": pair, "pair_id": pair, "speaker_id": row["speaker_id"], "errors": ""}
        if pair not in failed:
            for metric in suite.metrics(task):
                if (pair, metric) not in missing:
                    cells[UPSTREAM_METRICS[metric]] = repr(values[(pair, metric)])
                else:
                    cells["errors"] = f"{metric}: clip too short"
        csv_rows.append(cells)
    (task_dir / "run_manifest.json").write_text(json.dumps({"status": "generated", "samples": samples,
                                                            "input_failures": []}))
    with open(task_dir / "generation_sample_metrics.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(csv_rows)
    (task_dir / "metrics.json").write_text(json.dumps({"status": "complete", "metrics": {
        UPSTREAM_METRICS[m]: {"ci": [0.0, 1.0]} for m in suite.metrics(task)},
        "scorer_fingerprints": {"ecapa": "f" * 64, "whisper": "e" * 64}}))
    (task_dir / "scoring_manifest.json").write_text(json.dumps({"source_run": {"run_dir": str(task_dir)},
                                                                "task_evaluation": {"bootstrap_resamples": 200}}))


def fake_suite(root: Path, model: str, seed: int, shift: float = -0.1, failed=(), missing=(), tasks=CORE_TASKS):
    """A core-v1 suite run of ``tasks``; background = background-clean + ``shift`` in SIM, pair by pair."""
    suite = load_suite("core-v1", tasks)
    rng = np.random.default_rng(seed)
    values = {}
    for task in suite.tasks:
        if task.derived:
            continue
        for row in task_rows(suite, task).rows:
            for metric in suite.metrics(task):
                values[(row["pair_id"], metric, task.name)] = _value(metric, rng)
    for (pair, metric, name), value in list(values.items()):
        if name == "background" and metric == "sim":
            values[(pair, metric, name)] = values[(pair, metric, "background-clean")] + shift
    suite_dir = root / model
    for task in suite.tasks:
        if not task.derived:
            own = {(p, m): v for (p, m, n), v in values.items() if n == task.name}
            write_task_run(suite_dir / "tasks" / task.name, suite, task, own,
                           failed if task.name == "audioshift" else (), missing)
    (suite_dir / "suite_manifest.json").write_text(json.dumps({
        "suite_source": "core-v1", "suite": suite.record(), "suite_model": model, "run_name": "x",
        "tasks": {t.name: ({"derived_from": t.derived_from, "reason": "not scored: generate-only or timing run "
                            "(derived tasks are made at scoring time)"} if t.derived else {})
                  for t in suite.tasks}}))
    return suite_dir, values


@pytest.fixture(scope="module")
def two_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("suites")
    a, values = fake_suite(root, "model-a", 1)
    b, _ = fake_suite(root, "model-b", 2, shift=-0.2, failed={"VCTK-p311-000007"})
    return a, b, values


def _upstream_rows(result, groups=None):
    rows = []
    for row in result.rows:
        metrics = {UPSTREAM_METRICS_COLUMN[m]: v for m, v in row.items() if m in UPSTREAM_METRICS}
        rows.append({"pair_id": row["pair_id"], "metrics": metrics, "status": None,
                     "generated_sha256": result.generated_sha256.get(row["pair_id"]),
                     "groups": (groups or {}).get(row["pair_id"], {})})
    return rows


from rvcbench.benchmark.artifacts import METRIC_COLUMNS as UPSTREAM_METRICS_COLUMN  # noqa: E402


def test_coverage_means_groups_and_relative_change_equal_rvcbench(two_models):
    from rvcbench.benchmark import artifacts, submission

    from clonebench.suite.results import load_suite_results

    results = load_suite_results(two_models[0])
    background, clean = results.task("background"), results.task("background-clean")
    for task in (background, clean, results.task("audioshift")):
        upstream = _upstream_rows(task, task.group_values)
        statuses = json.loads((task.run_dir / "run_manifest.json").read_text())["samples"]
        for row, sample in zip(upstream, statuses):
            row["status"] = sample["status"]
        expected = artifacts.coverage(upstream, task.required, evaluated=True)
        assert task.coverage == expected
        assert task.means == artifacts.metric_means(upstream, task.required)
        for column in task.task.group_by:
            assert task.group_means[column] == submission._group_means(upstream, task.required, column)
    assert background.changes["upstream_relative_change_percent"] == submission.relative_change(background.means,
                                                                                                clean.means)
    assert set(results.task("audioshift").group_means) == {"accent", "gender", "age_group"}


def test_paired_change_is_exact_on_known_deltas(two_models):
    from clonebench.suite.results import load_suite_results

    background = load_suite_results(two_models[0]).task("background")
    paired = background.changes["paired"]["sim"]
    assert paired["n_pairs"] == 20 and paired["delta"] == pytest.approx(-0.1)
    assert paired["delta_ci95"] == pytest.approx([-0.1, -0.1])
    assert paired["percent"] == pytest.approx(-10.0 / paired["anchor_mean"])
    assert "wer" in background.changes["paired"]  # other metrics are paired too (their own values)
    hallucination = load_suite_results(two_models[0]).task("textshift-hallucination")
    assert hallucination.changes["paired"] == {}
    assert "no shared source pair" in hallucination.changes["paired_reason"]
    assert hallucination.changes["upstream_relative_change_percent"]  # upstream's unpaired change still holds


def test_derived_and_failed_tasks_are_listed_with_their_reason(two_models):
    from clonebench.suite.results import load_suite_results
    from clonebench.suite.tables import markdown

    results = load_suite_results(two_models[1])
    derived = results.task("compression-mp3-64k")
    assert derived.status == "not_scored" and "generate-only" in derived.reason
    assert derived.coverage["requested"] == 24 and derived.coverage["status"] == "partial"
    audioshift = results.task("audioshift")
    assert audioshift.status == "partial" and audioshift.means is None
    assert audioshift.failures == {"VCTK-p311-000007": "HTTP 500 No audio generated"}
    assert audioshift.metrics["sim"].n_valid == 23 and audioshift.metrics["sim"].n_requested == 24
    text = markdown(results)
    assert "| compression-mp3-64k |" in text and "not scored: not scored: generate-only" in text
    assert "## audioshift by accent" in text and "## Change against the anchor task" in text
    assert "VCTK-p311-000007: HTTP 500" in text
    assert results.status == "partial"


def test_html_section_lists_worst_tasks_first(two_models):
    from clonebench.suite.html import suite_section, worst_first
    from clonebench.suite.results import load_suite_results

    results = load_suite_results(two_models[1])
    order = [t.name for t in worst_first(results.tasks)]
    assert order[0] == "audioshift" and order[-1] == "compression-mp3-64k"
    complete = [t for t in worst_first(results.tasks) if t.status == "complete"]
    assert [t.metrics["sim"].mean for t in complete] == sorted(t.metrics["sim"].mean for t in complete)
    html = suite_section(results)
    assert html.index(">audioshift<") < html.index(">background-clean<") < html.index(">compression-mp3-64k<")


def test_submission_json_is_read_by_rvcbench_compare(two_models, tmp_path):
    from rvcbench.benchmark.comparison import compare_submissions

    from clonebench.suite.outputs import write_suite_outputs

    for suite_dir in two_models[:2]:
        write_suite_outputs(suite_dir)
    first = json.loads((two_models[0] / "submission.json").read_text())
    assert first["suite_sha256"] == load_suite("core-v1", CORE_TASKS).suite_sha256
    assert first["tasks"]["background"]["relative_change_percent"]
    comparison = compare_submissions([two_models[0], two_models[1]], tmp_path / "cmp")
    assert [m["model"] for m in comparison["models"]] == ["model-a", "model-b"]
    cells = {(r["task"], r["metric"], r["model"]): r for r in comparison["rows"]}
    assert cells[("background", "sim", "model-a")]["mean"] == pytest.approx(first["tasks"]["background"]["means"]["sim"])
    assert cells[("audioshift", "sim", "model-b")]["mean"] is None  # partial for model-b: no mean, as upstream
    assert cells[("compression-mp3-64k", "sim", "model-a")]["task_status"] == "partial"
    assert (tmp_path / "cmp" / "comparison.md").is_file()


def test_a_tasks_failure_rate_carries_its_wilson_interval(tmp_path):
    """fail is a rate: the suite tables show failure_modes' Wilson interval, not the bootstrap that collapses."""
    from clonebench.failures.rates import wilson
    from clonebench.suite.results import read_task

    suite = load_suite("core-v1", ["english-libritts"])
    (task,) = suite.tasks
    rows = task_rows(suite, task).rows
    values = {(r["pair_id"], m): 0.5 for r in rows for m in suite.metrics(task)}
    task_dir = tmp_path / "libritts"
    write_task_run(task_dir, suite, task, values)
    metrics = json.loads((task_dir / "metrics.json").read_text())
    metrics["metrics"]["fail"] = {"mean": 0.0, "ci": [0.0, 0.0], "n_valid": len(rows), "n_requested": len(rows)}
    metrics["failure_modes"] = {"n": len(rows), "failed": 0, "rate": 0.0, "ci": wilson(0, len(rows), 0.95)}
    (task_dir / "metrics.json").write_text(json.dumps(metrics))
    result = read_task(suite, task, task_dir, {})
    assert result.metrics["fail"].mean == 0.0 and result.metrics["fail"].ci == wilson(0, len(rows), 0.95)
    assert result.metrics["fail"].ci[1] > 0
