"""A suite run as rvcbench 2.2.1's ``submission.json`` (``benchmark/submission.py``), so that ``rvcbench compare``
(``benchmark/comparison.py``) reads it beside submissions scored by rvcbench itself.

Same schema and meaning: suite record (``suite_sha256`` as rvcbench computes it, so the same suite and task
selection compare), per task its status, required metrics, coverage, failures, generated audio hashes, the run
manifest and its sha256, an evaluation fingerprint, and, for complete tasks only, ``means`` (plain sums),
``group_means`` and ``relative_change_percent`` against the anchor. clonebench's scorers are not rvcbench's, so
its evaluation fingerprints never equal rvcbench's: a comparison with an rvcbench-scored submission is reported
as an incompatible protocol (unranked), as it should be. ``producer`` says which harness wrote the file.
"""

from __future__ import annotations

from pathlib import Path

from clonebench.core.hashing import sha256_file
from clonebench.suite.results import SuiteResults, TaskResult

PROTOCOL = "rvcbench-submission-v1"


def _relative(path: Path | None, root: Path) -> str | None:
    if path is None:
        return None
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def task_entry(task: TaskResult, suite_dir: Path) -> dict:
    definition = task.task.raw
    entry = {key: definition[key] for key in ("dimension", "evaluation", "anchor", "derived_from") if key in definition}
    entry.update({"status": task.coverage.get("status", "partial") if task.status != "failed" else "failed",
                  "required_metrics": list(task.required), "coverage": task.coverage,
                  "run_manifest": _relative(task.generation_manifest, suite_dir),
                  "run_manifest_sha256": sha256_file(task.generation_manifest) if task.generation_manifest else None,
                  "evaluation_fingerprint": task.evaluation_fingerprint,
                  "failures": task.failures, "generated_sha256": task.generated_sha256})
    if task.reason:
        entry["error"] = task.reason
    if task.means is not None:
        entry["means"] = task.means
        if task.group_means:
            entry["group_means"] = task.group_means
    if task.changes and task.changes["upstream_relative_change_percent"] is not None:
        entry["relative_change_percent"] = task.changes["upstream_relative_change_percent"]
    return entry


def submission(results: SuiteResults) -> dict:
    from clonebench import __version__

    suite = results.suite
    record = {key: value for key, value in suite.record().items() if key not in ("hf_dataset_id", "hf_revision",
                                                                                  "files")}
    tasks = {task.name: task_entry(task, results.suite_dir) for task in results.tasks}
    complete = all(t["status"] == "complete" for t in tasks.values())
    return {"schema_version": 1, "protocol": PROTOCOL, **record, "model": results.model, "rvcbench_version": None,
            "status": "complete" if complete else "partial", "tasks": tasks,
            "producer": {"harness": "clonebench", "version": __version__,
                         "suite_files": suite.package.describe(), "hf_dataset_id": suite.hf_dataset_id,
                         "hf_revision": suite.hf_revision,
                         "note": _made(results.record) + " and scored by clonebench; its scorer fingerprints differ "
                                 "from rvcbench's, so rvcbench compare treats the two harnesses' scores as incompatible"}}


def _made(record: dict) -> str:
    """How the suite's audio was made: over HTTP, or a folder scored by ``clonebench score --suite``."""
    return ("generated outside clonebench (a folder of WAVs, clonebench score --suite)"
            if record.get("generated_outside") else "generated over HTTP")
