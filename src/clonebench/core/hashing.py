"""sha256 of bytes, files and folder trees, with a persistent cache for large unchanged files.

The cache is an SQLite table keyed by (real path, size, mtime_ns, inode): a multi-GB checkpoint
that has not changed since it was last hashed is not read again. SQLite (stdlib) is used because
several shards may hash the same checkpoint at once and it handles concurrent writers.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

CHUNK = 4 * 1024 * 1024
# shared with clonebench.data.audio_cache, which records validated input audio in the same file
FILE_TABLE_SQL = ("CREATE TABLE IF NOT EXISTS file_sha256 (path TEXT, size INTEGER, mtime_ns INTEGER,"
                  " inode INTEGER, sha256 TEXT, PRIMARY KEY (path, size, mtime_ns, inode))")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class HashCache:
    """sha256 of files, remembered by (path, size, mtime_ns, inode)."""

    def __init__(self, db_path: Path | None):
        self.db_path = db_path
        self._conn: sqlite3.Connection | None = None
        if db_path is not None:
            db_path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(db_path, timeout=60)
            self._conn.execute(FILE_TABLE_SQL)
            self._conn.commit()

    def sha256(self, path: Path) -> str:
        real = os.path.realpath(path)
        st = os.stat(real)
        key = (real, st.st_size, st.st_mtime_ns, st.st_ino)
        if self._conn is not None:
            row = self._conn.execute(
                "SELECT sha256 FROM file_sha256 WHERE path=? AND size=? AND mtime_ns=? AND inode=?", key
            ).fetchone()
            if row:
                return row[0]
        digest = sha256_file(Path(real))
        if self._conn is not None:
            self._conn.execute("INSERT OR REPLACE INTO file_sha256 VALUES (?, ?, ?, ?, ?)", (*key, digest))
            self._conn.commit()
        return digest

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


SOURCE_SUFFIXES = frozenset(
    {".py", ".pyx", ".pyi", ".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".txt", ".md",
     ".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp", ".sh", ".jinja", ".j2", ".lock"}
)
SKIP_DIRS = frozenset({".git", "__pycache__", ".mypy_cache", ".pytest_cache", ".venv", "node_modules",
                       "checkpoints", "references", "results", "outputs"})


@dataclass(frozen=True)
class TreeHash:
    root: str
    sha256: str
    files: int
    bytes: int

    def as_dict(self) -> dict:
        return {"path": self.root, "sha256": self.sha256, "files": self.files, "bytes": self.bytes}


def tree_sha256(root: Path, cache: HashCache, *, sources_only: bool) -> TreeHash:
    """Digest of a folder: sha256 over sorted lines 'relative/path<TAB>file sha256'.

    With ``sources_only`` only source-like files count (code trees carry caches, checkpoints and
    reference audio that do not define the server's behaviour); otherwise every file counts.
    A single file is hashed as a one-entry tree named by its file name.
    """
    root = Path(root)
    if root.is_file():
        entries = [(root.name, root)]
    else:
        entries = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not (sources_only and d in SKIP_DIRS))
            for name in filenames:
                full = Path(dirpath) / name
                if sources_only and full.suffix.lower() not in SOURCE_SUFFIXES:
                    continue
                entries.append((full.relative_to(root).as_posix(), full))
    entries.sort()
    digest = hashlib.sha256()
    total = 0
    for rel, full in entries:
        digest.update(f"{rel}\t{cache.sha256(full)}\n".encode("utf-8"))
        total += full.stat().st_size
    return TreeHash(str(root), digest.hexdigest(), len(entries), total)
