"""``sample_events.jsonl``: an append-only, fsync'd journal of every attempt and sample status.

The journal is the source of truth for what a run did; ``run_manifest.json`` is a summary of it.
A torn last line (a crash mid-write) is ignored when reading; a corrupt line anywhere before the
last one is a JournalError, since it means the file was damaged, not merely cut short.
"""

from __future__ import annotations

import errno
import json
import os
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from clonebench.core.errors import JournalError
from clonebench.core.records import SampleOutcome
from clonebench.core.redact import redact_value

JOURNAL_NAME = "sample_events.jsonl"
MANIFEST_NAME = "run_manifest.json"  # the run's summary, written by generate.recorder


class Journal:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair_torn_tail()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def _repair_torn_tail(self) -> None:
        """Cut a torn last line so that new events start on a fresh line."""
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as handle:
                handle.truncate(keep)
                handle.flush()
                os.fsync(handle.fileno())

    def append(self, event: str, sync: bool = True, **fields) -> None:
        """Append one event; ``sync=False`` defers the fsync to the next ``sync()`` (for events that can be
        re-derived after a crash, such as reused audio)."""
        record = redact_value({"event": event, "ts": round(time.time(), 6), **fields})  # no secret is journaled
        line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        with self._lock:
            size = os.fstat(self._fd).st_size
            try:
                written = os.write(self._fd, line)
                if written != len(line):  # a full disk can take part of a write without an error
                    raise OSError(errno.ENOSPC, f"short write ({written} of {len(line)} bytes)", str(self.path))
                if sync:
                    os.fsync(self._fd)
            except OSError:
                try:  # no torn line left behind for the next append to follow
                    os.ftruncate(self._fd, size)
                except OSError:
                    pass
                raise

    def sync(self) -> None:
        with self._lock:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def read_events(path: Path) -> Iterator[dict]:
    """Events of a journal; ignores a torn last line, raises JournalError on earlier corruption."""
    path = Path(path)
    if not path.exists():
        return
    lines = path.read_bytes().split(b"\n")
    # Whatever follows the last newline is a write cut short by a crash (each event is written with
    # one write call ending in a newline): ignored, even where the cut fell just before the newline.
    for number, raw in enumerate(lines[:-1], start=1):
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise JournalError(f"{path} line {number} is corrupt ({exc}); the journal was damaged, not just cut "
                               "short: restore it or start a new run") from exc
        if not isinstance(record, dict) or "event" not in record:
            raise JournalError(f"{path} line {number} is not a journal event")
        yield record


def final_outcomes(events: Iterable[dict]) -> dict[str, SampleOutcome]:
    """The last status of every sample among ``events`` (e.g. ``read_events(path)``), keyed by sample id."""
    return {e["sample_id"]: SampleOutcome.from_dict(e) for e in events if e["event"] == "sample"}


def attempt_counts(events: Iterable[dict], purpose: str = "sample") -> dict[str, int]:
    """Attempts per sample id for one purpose: the sample's own requests by default; the gate's requests
    (``reference_check``, ``determinism_probe``) are journaled under the sample they borrow a reference from."""
    counts: dict[str, int] = {}
    for record in events:
        if record["event"] == "attempt_end" and record.get("sample_id") \
                and record.get("purpose", "sample") == purpose:
            counts[record["sample_id"]] = counts.get(record["sample_id"], 0) + 1
    return counts


def gate_attempts(events: Iterable[dict]) -> dict[str, int]:
    """Attempts of the readiness gate by purpose (reference_check, determinism_probe), apart from samples'."""
    counts: dict[str, int] = {}
    for record in events:
        purpose = record.get("purpose", "sample")
        if record["event"] == "attempt_end" and purpose != "sample":
            counts[purpose] = counts.get(purpose, 0) + 1
    return counts
