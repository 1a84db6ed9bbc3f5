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
from clonebench.core.records import SampleOutcome, SampleStatus
from clonebench.core.redact import redact_value
from clonebench.core.untrusted import UntrustedFileError, parse_json, read_bytes

JOURNAL_NAME = "sample_events.jsonl"
MANIFEST_NAME = "run_manifest.json"  # the run's summary, written by generate.recorder
MAX_JOURNAL_BYTES = 1024 * 1024 * 1024  # a journal larger than this is refused (full-v1 writes a few MB per task)

_TEXT, _NUMBER, _INT = (str,), (int, float), (int,)
# Fields of the events that readers use, with the types they must have when present (None is always allowed).
_EVENT_FIELDS = {
    "sample": {**{name: _TEXT for name in ("sample_id", "pair_id", "speaker_id", "status", "audio_path",
                                           "audio_sha256", "error_class", "error", "reused_from")},
               **{name: _INT for name in ("audio_bytes", "sample_rate", "frames", "channels", "attempts")},
               **{name: _NUMBER for name in ("duration_s", "synthesis_time_s", "ttfb_s", "rtf")}},
    "attempt_start": {name: _TEXT for name in ("sample_id", "purpose", "request_sha256")},
    "attempt_end": {**{name: _TEXT for name in ("sample_id", "purpose", "outcome", "response_sha256")},
                    "duration_s": _NUMBER},
    "fingerprints": {"input": _TEXT, "generation": _TEXT, "generation_fields": (dict,)},
    "run_end": {"status": _TEXT},
}
_REQUIRED = {"sample": ("sample_id", "pair_id", "speaker_id", "status")}
_STATUSES = {s.value for s in SampleStatus}


def _event_problem(record: dict) -> str | None:
    """What is wrong with a decoded event's fields (a traceback for its readers otherwise), or None."""
    event = record.get("event")
    if not isinstance(event, str):
        return "its 'event' is not a string"
    for key in _REQUIRED.get(event, ()):
        if record.get(key) is None:
            return f"its {event!r} event has no {key!r}"
    for key, types in _EVENT_FIELDS.get(event, {}).items():
        value = record.get(key)
        if value is not None and (not isinstance(value, types) or isinstance(value, bool) and bool not in types):
            return f"its {event!r} event's {key!r} is a {type(value).__name__}, not a {types[0].__name__}"
    if event == "sample" and record["status"] not in _STATUSES:
        return f"its 'sample' event's 'status' is not one of {sorted(_STATUSES)}"
    return None


class Journal:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair_torn_tail()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def _repair_torn_tail(self) -> None:
        """Cut a torn last line so that new events start on a fresh line."""
        if not os.path.lexists(self.path):
            return
        try:
            data = read_bytes(self.path, max_bytes=MAX_JOURNAL_BYTES, follow=False, what="journal")
        except UntrustedFileError as exc:
            raise JournalError(f"{exc}: start a new run (a journal is a regular file clonebench wrote)") from None
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
    if not os.path.lexists(path):
        return
    try:
        data = read_bytes(path, max_bytes=MAX_JOURNAL_BYTES, follow=False, what="journal")
    except UntrustedFileError as exc:
        raise JournalError(f"{exc}; restore the run's journal or start a new run") from None
    lines = data.split(b"\n")
    # Whatever follows the last newline is a write cut short by a crash (each event is written with
    # one write call ending in a newline): ignored, even where the cut fell just before the newline.
    for number, raw in enumerate(lines[:-1], start=1):
        try:
            record = parse_json(raw.decode("utf-8"), path, "journal")
        except UnicodeDecodeError as exc:
            raise JournalError(f"{path} line {number} is corrupt (not UTF-8 at byte {exc.start}); the journal was "
                               "damaged, not just cut short: restore it or start a new run") from None
        except UntrustedFileError as exc:
            raise JournalError(f"{path} line {number} is corrupt ({exc.reason}); the journal was damaged, not just "
                               "cut short: restore it or start a new run") from None
        if not isinstance(record, dict) or "event" not in record:
            raise JournalError(f"{path} line {number} is not a journal event")
        problem = _event_problem(record)
        if problem:
            raise JournalError(f"{path} line {number} is not a valid journal event ({problem}); the journal was "
                               "damaged: restore it or start a new run")
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


MAX_RUN_RECORD_BYTES = 512 * 1024 * 1024  # a run's JSON record (run_manifest.json, metrics.json, ...) larger is refused


def read_record(path: Path, error: type[Exception] = JournalError, fix: str = "restore it or re-run") -> dict:
    """A JSON object clonebench wrote into a run folder (never a symbolic link, a FIFO or a directory), bounded in
    size; ``error`` (a ClonebenchError class) naming the file and the fix otherwise."""
    try:
        value = parse_json(read_bytes(path, max_bytes=MAX_RUN_RECORD_BYTES, follow=False, what="run record")
                           .decode("utf-8"), path, "run record")
    except UnicodeDecodeError as exc:
        raise error(f"run record {path}: not UTF-8 (invalid byte at offset {exc.start}); {fix}") from None
    except UntrustedFileError as exc:
        raise error(f"{exc}; {fix}") from None
    if not isinstance(value, dict):
        raise error(f"run record {path}: not a JSON object; {fix}")
    return value


def record_problem(record: dict, spec: dict[str, tuple[type, ...]]) -> str | None:
    """The first ``key`` (dotted for nested objects: ``fingerprints.input``) of ``record`` whose value is present but
    not of the given types; None when all are right."""
    for dotted, types in spec.items():
        value: object = record
        for part in dotted.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None and (not isinstance(value, types) or isinstance(value, bool) and bool not in types):
            return f"{dotted!r} is a {type(value).__name__}, not a {' or '.join(t.__name__ for t in types)}"
    return None


def samples_problem(samples: object) -> str | None:
    """What is wrong with a run manifest's ``samples`` list for its readers, or None."""
    if samples is None:
        return None
    if not isinstance(samples, list):
        return "'samples' is not a list"
    text = (str,)
    for number, sample in enumerate(samples):
        if not isinstance(sample, dict):
            return f"samples[{number}] is not an object"
        problem = record_problem(sample, {"sample_id": text, "pair_id": text, "speaker_id": text, "status": text,
                                          "audio_path": text, "audio_sha256": text, "error": text,
                                          "error_class": text})
        if problem:
            return f"samples[{number}]: {problem}"
        for key in ("sample_id", "pair_id"):
            if sample.get(key) is None:
                return f"samples[{number}] has no {key!r}"
    return None
