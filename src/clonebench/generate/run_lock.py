"""Run-directory locks: one process writes a run, and one process at a time resumes from it.

A runner takes an exclusive ``flock`` on ``<run_dir>/.clonebench.lock`` before it writes anything, and a
resuming run takes the same lock on every run it reuses audio from, for as long as it runs. The kernel
drops the locks when the process ends, however it ends (SIGKILL included), so a lock is never stale.
A run that is locked is refused with a message saying why, instead of two processes sending the same
pairs (two resumers of one run would each send every pair the run had not finished).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from clonebench.core.errors import ClonebenchError

LOCK_NAME = ".clonebench.lock"


class RunLockedError(ClonebenchError):
    """Another live process holds the lock of a run directory."""


class RunLocks:
    """The locks a run holds; ``release()`` (or the process's end) drops them all."""

    def __init__(self) -> None:
        self._fds: list[int] = []

    def own(self, run_dir: Path) -> None:
        """Lock the run directory this process writes."""
        self._take(Path(run_dir), f"run directory {run_dir} is locked by another clonebench process that is "
                                   "writing it (or resuming from it); use a new run directory")

    def source(self, run_dir: Path, resumed_by: Path) -> None:
        """Lock a run this process resumes from (reuses audio of)."""
        self._take(Path(run_dir), f"vc.resume_from: run {run_dir} is in use by another clonebench process (a "
                                   "runner still writing it, or another resume of it); two resumes of one run would "
                                   "both send its unfinished pairs. Wait for that process to end, then resume from "
                                   f"the newest run of the chain (this one, {resumed_by}, records where it came from)")

    def _take(self, run_dir: Path, message: str) -> None:
        try:
            fd = os.open(run_dir / LOCK_NAME, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except (PermissionError, OSError) as exc:
            if not run_dir.is_dir():
                raise RunLockedError(f"{run_dir}: cannot lock it ({exc.strerror}); is it a run directory?") from exc
            fd = os.open(run_dir, os.O_RDONLY | os.O_CLOEXEC)  # a read-only run of an older version: lock the folder
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunLockedError(message) from None
        self._fds.append(fd)

    def release(self) -> None:
        while self._fds:
            os.close(self._fds.pop())
