"""How far the evaluate phase got, durably: ``scoring_progress.json`` in the run directory, rewritten atomically
(fsync'd temporary file, rename, fsync'd folder) when scoring starts, when each scorer group starts (with its
cache hits), after each scored batch and when the phase ends. A run killed while scoring (SIGKILL included)
therefore keeps, per scorer group, how many items were cached, how many were scored and which group was
running; ``clonebench status`` shows it and ``clonebench report`` refuses the run with it.

While scoring, the process holds an ``flock`` on ``.scoring.lock``: the kernel drops it when the process ends,
however it ends, so a reader tells "still scoring" from "killed" without trusting a pid.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

from clonebench.core.atomic import atomic_write_json
from clonebench.core.errors import ClonebenchError
from clonebench.core.runpaths import recorded
from clonebench.core.untrusted import UntrustedFileError, read_json

PROGRESS_NAME = "scoring_progress.json"
LOCK_NAME = ".scoring.lock"
SCHEMA = "clonebench.scoring_progress/v1"
MAX_PROGRESS_BYTES = 16 * 1024 * 1024  # a progress record holds a few counters per scorer group


class ScoringProgress:
    """The progress file of one evaluation; methods are safe from the two scoring threads (evaluate/execution/overlap.py)."""

    def __init__(self, run_dir: Path, groups: list[str], source_run: Path):
        self.path = Path(run_dir) / PROGRESS_NAME
        self._lock = threading.Lock()
        Path(run_dir).mkdir(parents=True, exist_ok=True)
        self._fd = os.open(Path(run_dir) / LOCK_NAME, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise ClonebenchError(f"{run_dir} is being scored by another clonebench process; score into a new run "
                                  "directory (the metric cache is shared)") from None
        self.state = {"schema": SCHEMA, "state": "preparing", "pid": os.getpid(),
                      "source_run": recorded(run_dir, source_run),
                      "started_at": time.time(), "updated_at": time.time(),
                      "groups": {g: {"state": "waiting", "total": None, "cached": 0, "scored": 0,
                                     "scorer_fingerprint": None} for g in groups}}
        self._write()

    def ready(self, total: int) -> None:
        """The generated audio is re-hashed and matched: ``total`` items to score in every group."""
        with self._lock:
            self.state["state"] = "scoring"
            for entry in self.state["groups"].values():
                entry["total"] = total
            self._write()

    def _write(self) -> None:
        self.state["updated_at"] = time.time()
        atomic_write_json(self.path, self.state)

    def start(self, group: str, fingerprint: str, total: int, cached: int) -> None:
        with self._lock:
            self.state["groups"][group].update(state="running", scorer_fingerprint=fingerprint, total=total,
                                               cached=cached)
            self._write()

    def scored(self, group: str, count: int) -> None:
        with self._lock:
            self.state["groups"][group]["scored"] += count
            self._write()

    def done(self, group: str) -> None:
        with self._lock:
            self.state["groups"][group]["state"] = "done"
            self._write()

    def finish(self, status: str) -> None:
        """The phase wrote its outputs (metrics.json, the CSV, scoring_manifest.json): mark it finished."""
        with self._lock:
            self.state.update(state="finished", status=status)
            self._write()
        self.close()

    def fail(self, error: str) -> None:
        """The phase stopped with an error (not a kill): say so, with the error."""
        with self._lock:
            self.state.update(state="failed", error=error)
            try:
                self._write()
            except OSError:  # e.g. the disk is full: the error being raised says more than this file could
                pass

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def scorer_alive(run_dir: Path) -> bool:
    """True when a process still holds the run's scoring lock (it is scoring now)."""
    try:
        fd = os.open(Path(run_dir) / LOCK_NAME, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def read_progress(run_dir: Path) -> dict | None:
    """The run's scoring progress with ``alive`` (a process is scoring now), or None when it has none.
    An unreadable file is reported as such (``state: "unreadable"``), never raised."""
    path = Path(run_dir) / PROGRESS_NAME
    if not path.exists():
        return None
    try:
        progress = read_json(path, max_bytes=MAX_PROGRESS_BYTES, follow=False, what="scoring progress")
        if not isinstance(progress, dict) or not isinstance(progress.get("groups"), dict):
            raise ValueError("not a progress record")
    except (OSError, ValueError, UntrustedFileError) as exc:
        return {"state": "unreadable", "error": f"{path}: {exc}", "groups": {}, "alive": scorer_alive(run_dir)}
    progress["alive"] = scorer_alive(run_dir)
    return progress


def unfinished_reason(progress: dict) -> str | None:
    """Why a run whose progress is ``progress`` has no complete evaluation (None when it finished)."""
    if progress.get("state") == "finished":
        return None
    if progress.get("state") == "unreadable":
        return f"its scoring progress cannot be read ({progress.get('error')})"
    if progress.get("state") == "failed":
        return f"its evaluate phase failed ({progress.get('error')}): " + describe_groups(progress)
    doing = "scoring" if progress.get("state") == "scoring" else "preparing to score (re-hashing the generated audio)"
    when = f"is still {doing}" if progress.get("alive") else f"was interrupted while {doing} (the process died)"
    return f"its evaluate phase {when}: " + describe_groups(progress)


def unfinished_advice(progress: dict) -> str:
    """What to do about a run without a complete evaluation: wait while a process is scoring it, else score again."""
    if progress.get("alive"):
        return "Wait for it to finish: a process is scoring it now (`clonebench status RUN` shows its progress)"
    return ("Score it again (a new evaluate run reuses every score already in the metric cache); `clonebench status` "
            "shows the same")


def describe_groups(progress: dict) -> str:
    """``ecapa done 4/4 (4 cached, 0 scored); whisper RUNNING 2/4 (0 cached, 2 scored); mcd waiting 0/4``."""
    parts = []
    for group, g in progress.get("groups", {}).items():
        if not isinstance(g, dict):
            continue
        state = str(g.get("state"))
        cached, scored, total = g.get("cached", 0), g.get("scored", 0), g.get("total", 0)
        parts.append(f"{group} {'RUNNING' if state == 'running' else state} {_count(cached) + _count(scored)}/"
                     f"{'?' if total is None else total} ({cached} cached, {scored} scored)")
    return "; ".join(parts) or "no scorer group started"


def _count(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
