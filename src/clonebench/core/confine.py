"""Paths read from a run's own files (journal, manifest, shard) must stay inside that run's directory.

A journal or manifest is data, possibly crafted: an ``audio_path`` that is absolute, climbs out with
``..``, or names a symlink that leads elsewhere must not make clonebench read, link, score or overwrite a
file outside the run. Every such path goes through :func:`inside` (symlinks followed), which refuses it.
"""

from __future__ import annotations

import os
from pathlib import Path

from clonebench.core.errors import ClonebenchError


class OutsideRunError(ClonebenchError):
    """A path recorded in a run's files resolves outside the run directory."""


def inside(root: Path, relpath: str | os.PathLike, what: str) -> Path:
    """``root / relpath`` resolved (symlinks followed, ``..`` collapsed); OutsideRunError unless it lies
    strictly under the resolved ``root``. ``what`` names the record the path came from, for the message."""
    text = os.fspath(relpath)
    if not text or "\x00" in text or Path(text).is_absolute():
        raise OutsideRunError(f"{what}: path {text!r} is absolute or empty, outside the run directory {root} "
                              "(a run's files hold paths relative to the run; the record was edited or crafted)")
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(Path(root) / text))
    if real_root not in real.parents:
        raise OutsideRunError(f"{what}: path {text!r} resolves to {real}, outside the run directory {real_root} "
                              "(through '..' or a symbolic link); it is not used")
    return real
