"""Known-good input audio: skip re-reading LibriTTS files that were already hashed and validated.

Keyed by (real path, size, mtime_ns, inode) -> sha256, and sha256 -> validated, in the same SQLite file as
the hash cache. Lookups never create the file; new entries are written only by ``commit()``, which the
caller runs after the whole manifest passed, so a refused manifest writes nothing outside its run
directory. A changed file (size, mtime or inode) is simply read again.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from clonebench.hashing import FILE_TABLE_SQL


class AudioCheckCache:
    def __init__(self, db_path: Path | None):
        self.db_path = Path(db_path) if db_path else None
        self._pending_files: list[tuple] = []
        self._pending_valid: list[str] = []
        self._reader: sqlite3.Connection | None = None
        if self.db_path is not None and self.db_path.is_file():
            self._reader = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=60)

    @staticmethod
    def _key(path: Path) -> tuple:
        """``path`` must already be resolved (the manifest reader resolves every path)."""
        st = os.stat(path)
        return str(path), st.st_size, st.st_mtime_ns, st.st_ino

    def known_valid(self, path: Path) -> str | None:
        """The sha256 of ``path`` if it is unchanged since it was validated, else None."""
        if self._reader is None:
            return None
        try:
            row = self._reader.execute(
                "SELECT f.sha256 FROM file_sha256 f JOIN valid_wav v ON v.sha256 = f.sha256 "
                "WHERE f.path=? AND f.size=? AND f.mtime_ns=? AND f.inode=?", self._key(path)).fetchone()
        except sqlite3.Error:
            return None  # an older cache without the table: read the file
        return row[0] if row else None

    def remember(self, path: Path, sha256: str) -> None:
        self._pending_files.append((*self._key(path), sha256))
        self._pending_valid.append(sha256)

    def commit(self) -> None:
        if self.db_path is None or not self._pending_files:
            return
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(self.db_path, timeout=60) as conn:
            conn.execute(FILE_TABLE_SQL)
            conn.execute("CREATE TABLE IF NOT EXISTS valid_wav (sha256 TEXT PRIMARY KEY)")
            conn.executemany("INSERT OR REPLACE INTO file_sha256 VALUES (?, ?, ?, ?, ?)", self._pending_files)
            conn.executemany("INSERT OR IGNORE INTO valid_wav VALUES (?)", [(s,) for s in self._pending_valid])
        self._pending_files.clear()
        self._pending_valid.clear()

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
