"""Known-good input audio: skip re-reading LibriTTS files that were already hashed and validated.

Keyed by (real path, size, mtime_ns, ctime_ns, inode) -> sha256 of a validated WAV, in the same SQLite file as
the hash cache. ``st_ctime_ns`` is in the key because a file rewritten in place can be given back its size,
mtime and inode, but not its ctime (the kernel sets it on every change, and no user call sets it back). Lookups never create the file; new entries are written only by ``commit()``, which the
caller runs after the whole manifest passed, so a refused manifest writes nothing outside its run
directory. A changed file (size, mtime, ctime or inode) is simply read again.

What is sent is checked once more: :func:`verified_bytes` hashes the reference bytes as they are read for a
request (they are read anyway) and refuses them unless they still match the validated sha256.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from clonebench.core.errors import ClonebenchError
from clonebench.core.hashing import sha256_bytes
from clonebench.core.records import AudioRef

TABLE_SQL = ("CREATE TABLE IF NOT EXISTS checked_wav (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, "
             "ctime_ns INTEGER, inode INTEGER, sha256 TEXT)")


class InputChangedError(ClonebenchError):
    """An input file changed between its validation and a request that sends it."""


def verified_bytes(ref: AudioRef, what: str) -> bytes:
    """The bytes of ``ref`` if they still have the sha256 that was validated (the manifest's, where it gives one)."""
    data = ref.read_bytes()
    digest = sha256_bytes(data)
    if digest != ref.sha256:
        raise InputChangedError(f"{what}: {ref.path or ref.label} changed since it was validated (sha256 {digest[:16]}... "
                                f"now, {ref.sha256[:16]}... when checked); nothing was sent for it. Restore the file "
                                "(or fix the manifest's hash) and resume the run")
    return data


class AudioCheckCache:
    def __init__(self, db_path: Path | None):
        self.db_path = Path(db_path) if db_path else None
        self._pending_files: list[tuple] = []
        self._reader: sqlite3.Connection | None = None
        if self.db_path is not None and self.db_path.is_file():
            self._reader = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=60)

    @staticmethod
    def _key(path: Path) -> tuple:
        """``path`` must already be resolved (the manifest reader resolves every path)."""
        st = os.stat(path)
        return str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino

    def known_valid(self, path: Path) -> str | None:
        """The sha256 of ``path`` if it is unchanged since it was validated, else None."""
        if self._reader is None:
            return None
        try:
            row = self._reader.execute(
                "SELECT sha256 FROM checked_wav WHERE path=? AND size=? AND mtime_ns=? AND ctime_ns=? AND inode=?",
                self._key(path)).fetchone()
        except sqlite3.Error:
            return None  # an older cache without the table: read the file
        return row[0] if row else None

    def remember(self, path: Path, sha256: str) -> None:
        self._pending_files.append((*self._key(path), sha256))

    def commit(self) -> None:
        if self.db_path is None or not self._pending_files:
            return
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(self.db_path, timeout=60) as conn:
            conn.execute(TABLE_SQL)  # only WAVs that passed validation are remembered
            conn.executemany("INSERT OR REPLACE INTO checked_wav VALUES (?, ?, ?, ?, ?, ?)", self._pending_files)
        self._pending_files.clear()

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
