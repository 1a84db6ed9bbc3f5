"""Durable file writes: write to a temporary file in the same folder, fsync, rename, fsync the folder.

A reader never sees a half-written file, and a crash leaves either the old or the new content.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from clonebench.core.errors import ClonebenchError


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        try:
            view = memoryview(data)
            while view:  # os.write may take part of the bytes; a full disk then raises on the next call
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)


def dumps(payload: Any, rows_key: str = "samples") -> str:
    """Indented JSON, except that the items of a long ``rows_key`` list go one per line, compact.

    Python's JSON encoder only runs in C without indentation; a 2,000-sample manifest indented throughout is
    slow to write repeatedly and long to read. One sample a line stays readable and diffable.
    """
    rows = payload.get(rows_key) if isinstance(payload, dict) else None
    if not isinstance(rows, list) or not rows:
        return json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n"
    head = json.dumps({k: v for k, v in payload.items() if k != rows_key}, indent=2, ensure_ascii=False, default=str)
    body = ",\n    ".join(json.dumps(r, ensure_ascii=False, default=str) for r in rows)
    opening = "{\n" if head == "{}" else head[:-2] + ",\n"
    return f'{opening}  "{rows_key}": [\n    {body}\n  ]\n}}\n'


def atomic_write_json(path: Path, payload: Any) -> None:
    """``payload`` as JSON, atomically, with every string redacted (manifests never hold a secret)."""
    from clonebench.core.redact import redact_value

    atomic_write_bytes(path, dumps(redact_value(payload)).encode("utf-8"))


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


class DiskFullError(ClonebenchError):
    """A write failed because the file system is full (or over quota)."""


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS
