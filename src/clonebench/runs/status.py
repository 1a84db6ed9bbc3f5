"""A run's status read back from its files: coverage (generated / requested), the errors of failed samples and,
for a run with an evaluate phase, how far scoring got per scorer group (cached / scored / total, which group was
running); for a suite run, each task's.

The journal is the source of truth, so a run that was killed shows what it really finished, even where its
run_manifest.json still says "running"; likewise the evaluate phase's durable progress file (evaluate/execution/progress.py)
and the run's metric cache, for a run killed while scoring. What is returned is untrusted text (server answers
reach it): ``clonebench status`` redacts it and escapes control characters before printing."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from clonebench.core.errors import ClonebenchError
from clonebench.core.records import SampleStatus
from clonebench.core.redact import register_secret
from clonebench.core.runpaths import generation_run
from clonebench.evaluate.execution.cache import count_records
from clonebench.evaluate.execution.progress import PROGRESS_NAME, read_progress, unfinished_reason
from clonebench.generate.journal import (
    JOURNAL_NAME,
    attempt_counts,
    final_outcomes,
    gate_attempts,
    read_events,
    read_record,
    record_problem,
    samples_problem,
)
from clonebench.generate.recorder import MANIFEST_NAME
from clonebench.suite.record import SUITE_MANIFEST, TASKS_DIR


def scoring_summary(run_dir: Path) -> dict | None:
    """The evaluate phase's progress (None when the run has none), with the records each group left in the run's
    metric cache (durable per record, so possibly ahead of the progress file's last batch)."""
    progress = read_progress(run_dir)
    if progress is None:
        return None
    for group, entry in progress["groups"].items():
        if isinstance(entry, dict) and isinstance(entry.get("scorer_fingerprint"), str):
            entry["records_in_run_cache"] = count_records(run_dir, group, entry["scorer_fingerprint"])
    progress["summary"] = unfinished_reason(progress) or f"finished: {progress.get('status')}"
    if isinstance(progress.get("source_run"), str):  # relative to the run, or absolute (another run, an older run)
        source = generation_run(run_dir, {"run_dir": progress["source_run"]})
        progress["source_run_present"] = (source / MANIFEST_NAME).is_file()
    return progress


def summarise(run_dir: Path) -> dict:
    manifest_path = run_dir / MANIFEST_NAME
    scoring = scoring_summary(run_dir)
    if not manifest_path.is_file() and scoring is not None:  # an evaluate-only run: scoring is all it has
        return {"run_dir": str(run_dir), "scoring": scoring}
    if not manifest_path.is_file():
        raise ClonebenchError(f"{run_dir}: no {MANIFEST_NAME} and no {PROGRESS_NAME}; is this a run directory?")
    fix = "restore the run's run_manifest.json (clonebench writes it) or re-run"
    manifest = read_record(manifest_path, ClonebenchError, fix)
    problem = record_problem(manifest, {"config": (dict,), "run_name": (str,), "errors": (list,),
                                        "input_failures": (list,), "fingerprints": (dict,)}) \
        or samples_problem(manifest.get("samples"))
    if problem:
        raise ClonebenchError(f"run record {manifest_path}: {problem}; {fix}")
    key_env = ((manifest.get("config") or {}).get("adversary") or {}).get("api_key_env")
    if isinstance(key_env, str) and key_env:
        register_secret(os.environ.get(key_env))  # in case an older run recorded it
    journal = run_dir / JOURNAL_NAME
    events = list(read_events(journal))
    outcomes = final_outcomes(events)
    attempts = attempt_counts(events)
    run_end = [e for e in events if e["event"] == "run_end"]
    requested = [s["sample_id"] for s in manifest.get("samples") or []]
    statuses = Counter()
    errors = []
    for sample_id in requested:
        outcome = outcomes.get(sample_id)
        status = outcome.status.value if outcome else SampleStatus.PENDING.value
        if outcome and outcome.status == SampleStatus.GENERATING:
            status = "interrupted_while_generating"
        statuses[status] += 1
        if outcome and outcome.status == SampleStatus.GENERATION_FAILED:
            errors.append({"pair_id": outcome.pair_id, "error_class": outcome.error_class, "error": outcome.error,
                           "attempts": attempts.get(sample_id, 0)})
    status = run_end[-1]["status"] if run_end else "interrupted (no run_end in the journal: the process died)"
    generated = statuses.get(SampleStatus.GENERATED.value, 0)
    return {"run_dir": str(run_dir), "run_name": manifest.get("run_name"), "status": status,
            "requested": len(requested), "generated": generated,
            "coverage": round(generated / len(requested), 4) if requested else 0.0,
            "statuses": dict(sorted(statuses.items())), "input_failures": manifest.get("input_failures") or [],
            "run_errors": manifest.get("errors") or [],
            "sample_errors": errors, "attempts": sum(attempts.values()),
            "gate_attempts": gate_attempts(events),
            "busy_waits": sum(1 for e in events if e["event"] == "server_busy"),
            "fingerprints": manifest.get("fingerprints") or {}, "scoring": scoring}


def suite_status(suite_dir: Path) -> dict:
    """A suite run: its record and each task run's summary (from the task's journal, so a suite still running or
    killed shows what each task really finished)."""
    path = suite_dir / SUITE_MANIFEST
    fix = f"restore the suite's {SUITE_MANIFEST} (clonebench writes it) or re-run the suite"
    record = read_record(path, ClonebenchError, fix)
    problem = record_problem(record, {"tasks": (dict,), "suite": (dict,), "errors": (list,)})
    bad = [] if problem else [n for n, e in (record.get("tasks") or {}).items()
                              if not isinstance(e, dict) or record_problem(e, {"reason": (str,), "derived_from": (str,)})]
    if problem or bad:
        raise ClonebenchError(f"suite record {path}: {problem or f'tasks.{bad[0]} is malformed'}; {fix}")
    tasks = {}
    for name, entry in (record.get("tasks") or {}).items():
        task_dir = suite_dir / TASKS_DIR / name
        tasks[name] = summarise(task_dir) if (task_dir / MANIFEST_NAME).is_file() else {
            "status": entry.get("reason") or ("derived from " + entry["derived_from"] if entry.get("derived_from")
                                              else "not started")}
    return {"suite_dir": str(suite_dir), "suite": (record.get("suite") or {}).get("suite"), "status": record.get("status"),
            "errors": record.get("errors") or [], "tasks": tasks}
