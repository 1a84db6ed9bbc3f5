"""``clonebench status RUN``: a run's (or a suite run's) status, coverage and errors, read by ``runs/status.py``
from the journal and the evaluate phase's progress. Everything printed comes from files a server's answers
reached: it is redacted and its control characters are shown as escapes (``clonebench.core.redact.shown``), so an
error body cannot clear the screen or fake a line. A sweep folder gives every shard's line (``runs/sweep.py``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from clonebench.core.redact import redact_value, shown
from clonebench.runs.status import suite_status, summarise
from clonebench.runs.scheduler import with_queue
from clonebench.runs.sweep import is_sweep_dir, sweep_lines, sweep_status
from clonebench.suite.record import is_suite_dir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="a run directory results/<run_name>/<stamp>-<id>, a suite run, or "
                        "a sweep results/<run_name>/multirun-<stamp>-<id> (each shard: state, job, node, counts, "
                        "next command)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def _say_scoring(say, scoring: dict) -> None:
    say("scoring  ", scoring["summary"])
    for group, entry in scoring["groups"].items():
        if not isinstance(entry, dict):
            continue
        cached, scored = entry.get("cached", 0), entry.get("scored", 0)
        done = sum(v for v in (cached, scored) if isinstance(v, int) and not isinstance(v, bool))
        on_disk = entry.get("records_in_run_cache")
        say(f"  {shown(group):<10} {shown(entry.get('state')):<8} {done}/{shown(entry.get('total'))} "
            f"({shown(cached)} cached, {shown(scored)} scored"
            + (f"; {on_disk} record(s) in the run's metric cache)" if on_disk is not None else ")"))


def run(args: argparse.Namespace) -> int:
    if is_sweep_dir(args.run_dir):
        summary = redact_value(with_queue(sweep_status(args.run_dir)))  # a job SLURM still runs is not dead
        if args.json:
            print(json.dumps(summary, indent=2))
        else:
            for line in sweep_lines(summary):
                print(shown(line))
        return 0
    if is_suite_dir(args.run_dir):
        summary = redact_value(suite_status(args.run_dir))
        if args.json:
            print(json.dumps(summary, indent=2))
            return 0
        print(shown(f"suite    {summary['suite']} {summary['status']}: {summary['suite_dir']}"))
        for error in summary["errors"]:
            print(shown(f"error    {error}"))
        for name, task in summary["tasks"].items():
            coverage = f" {task['generated']}/{task['requested']} generated" if "requested" in task else ""
            failed = f", {len(task['sample_errors'])} failed" if task.get("sample_errors") else ""
            print(shown(f"  {name:<26} {task['status']}{coverage}{failed}"))
        return 0
    summary = redact_value(summarise(args.run_dir))
    if args.json:
        print(json.dumps(summary, indent=2))  # ASCII-only: JSON escapes every control character
        return 0
    say = lambda *fields: print("".join(shown(f) for f in fields))  # noqa: E731 - one escaped line
    say("run      ", summary["run_dir"])
    if "status" not in summary:  # an evaluate-only run
        gone = summary["scoring"].get("source_run_present") is False
        say("source   ", summary["scoring"].get("source_run"),
            " (not found: moved or deleted; its audio cannot be re-read)" if gone else "")
        _say_scoring(say, summary["scoring"])
        return 0
    say("status   ", summary["status"])
    say(f"coverage {summary['generated']}/{summary['requested']} generated ({summary['coverage']:.1%}), "
        f"{summary['attempts']} attempts")
    for status, count in summary["statuses"].items():
        say(f"  {shown(status):<30} {count}")
    if summary["gate_attempts"]:
        gate = ", ".join(f"{shown(purpose)} {count}" for purpose, count in sorted(summary["gate_attempts"].items()))
        say(f"gate     {sum(summary['gate_attempts'].values())} attempts, not counted above ({gate})")
    if summary["busy_waits"]:
        say(f"busy     {summary['busy_waits']} busy answer(s) resent without spending an attempt")
    for failure in summary["input_failures"]:
        say(f"input_failed row {failure.get('row_number')}: ", failure.get("error"))
    for error in summary["run_errors"]:
        say("run error: ", error)
    for error in summary["sample_errors"]:
        say("failed ", error["pair_id"], f" after {error['attempts']} attempt(s): ", error["error_class"], ": ",
            error["error"])
    if summary["scoring"] is not None:
        _say_scoring(say, summary["scoring"])
    return 0
