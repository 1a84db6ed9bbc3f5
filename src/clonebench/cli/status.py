"""Show a run's status, coverage (generated / requested) and the errors of failed samples.

The journal is read as the source of truth, so a run that was killed shows what it really
finished, even where its run_manifest.json still says "running".
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from clonebench.errors import ClonebenchError
from clonebench.generate.journal import JOURNAL_NAME, attempt_counts, final_outcomes, gate_attempts, read_events
from clonebench.generate.recorder import MANIFEST_NAME
from clonebench.records import SampleStatus


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="a run directory results/<run_name>/<stamp>-<id>")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def summarise(run_dir: Path) -> dict:
    manifest_path = run_dir / MANIFEST_NAME
    if not manifest_path.is_file():
        raise ClonebenchError(f"{run_dir}: no {MANIFEST_NAME}; is this a run directory?")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    journal = run_dir / JOURNAL_NAME
    events = list(read_events(journal))
    outcomes = final_outcomes(events)
    attempts = attempt_counts(events)
    run_end = [e for e in events if e["event"] == "run_end"]
    requested = [s["sample_id"] for s in manifest.get("samples", [])]
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
            "statuses": dict(sorted(statuses.items())), "input_failures": manifest.get("input_failures", []),
            "run_errors": manifest.get("errors", []),
            "sample_errors": errors, "attempts": sum(attempts.values()),
            "gate_attempts": gate_attempts(events),
            "busy_waits": sum(1 for e in events if e["event"] == "server_busy"),
            "fingerprints": manifest.get("fingerprints", {})}


def run(args: argparse.Namespace) -> int:
    summary = summarise(args.run_dir)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"run      {summary['run_dir']}")
    print(f"status   {summary['status']}")
    print(f"coverage {summary['generated']}/{summary['requested']} generated ({summary['coverage']:.1%}), "
          f"{summary['attempts']} attempts")
    for status, count in summary["statuses"].items():
        print(f"  {status:<30} {count}")
    if summary["gate_attempts"]:
        gate = ", ".join(f"{purpose} {count}" for purpose, count in sorted(summary["gate_attempts"].items()))
        print(f"gate     {sum(summary['gate_attempts'].values())} attempts, not counted above ({gate})")
    if summary["busy_waits"]:
        print(f"busy     {summary['busy_waits']} busy answer(s) resent without spending an attempt")
    for failure in summary["input_failures"]:
        print(f"input_failed row {failure['row_number']}: {failure['error']}")
    for error in summary["run_errors"]:
        print(f"run error: {error}")
    for error in summary["sample_errors"]:
        print(f"failed {error['pair_id']} after {error['attempts']} attempt(s): {error['error_class']}: {error['error']}")
    return 0
