"""The server's SQLite store: ``DIR/server/ratings.sqlite``.

- WAL journal, ``synchronous=FULL``: an answer is one ``BEGIN IMMEDIATE`` ... ``COMMIT`` transaction, committed
  (and synced) before the HTTP response acknowledges it, so a crash (even SIGKILL) loses no acknowledged answer.
- A versioned schema: table ``meta`` holds ``schema_version`` and the ``test_id``; a database of another version or
  another test is refused with a clear error, never migrated silently.
- One server per database: an ``flock`` on ``ratings.sqlite.lock`` held for the server's life; a second server
  refuses, naming the first one's pid.
- A full disk (SQLite's "database or disk is full", ENOSPC) rolls the answer back and raises :class:`DiskFull`:
  the rater is told the answer was not saved; every earlier (acknowledged) answer stays committed."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Callable

from clonebench.core.errors import ClonebenchError

SCHEMA_VERSION = "1"
DB, LOCK = "ratings.sqlite", "ratings.sqlite.lock"
TABLES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE raters (
  id INTEGER PRIMARY KEY, rater_id TEXT UNIQUE NOT NULL, token_sha256 TEXT UNIQUE NOT NULL,
  participant TEXT UNIQUE, seed INTEGER NOT NULL, order_json TEXT NOT NULL, created_at TEXT NOT NULL,
  started_at TEXT, finished_at TEXT, completion_code TEXT, user_agent TEXT NOT NULL DEFAULT '');
CREATE TABLE answers (
  rater INTEGER NOT NULL REFERENCES raters(id), phase TEXT NOT NULL, position INTEGER NOT NULL,
  trial TEXT NOT NULL, record TEXT NOT NULL, received_at TEXT NOT NULL,
  PRIMARY KEY (rater, phase, position), UNIQUE (rater, phase, trial));
"""


class StoreError(ClonebenchError):
    pass


class DiskFull(StoreError):
    """The answer could not be written (disk or database full); nothing of it was committed."""


class ParticipantTaken(StoreError):
    """A platform participant who already has a rater (checked and refused inside the inserting transaction)."""


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _full(exc: BaseException) -> bool:
    return ("full" in str(exc).lower() and isinstance(exc, sqlite3.OperationalError)) or \
        (isinstance(exc, OSError) and exc.errno == errno.ENOSPC)


class ServerLock:
    """An exclusive ``flock`` on the lock file next to the database, holding this process's pid."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            other = os.pread(self.fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(self.fd)
            raise StoreError(f"another listening-serve (pid {other}) is serving this test ({self.path} is locked); "
                             "stop it first: two servers on one database would split the raters") from None
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        if self.fd >= 0:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = -1


class Store:
    """The database of one test. ``readonly`` (the export, even while a server runs): no lock, no write."""

    def __init__(self, folder: Path, test_id: str, readonly: bool = False):
        self.folder = Path(folder)
        self.path = self.folder / DB
        self.lock = None
        self._mutex = threading.Lock()
        if readonly:
            if not self.path.exists():
                raise StoreError(f"{self.path}: no server database (nothing was collected yet)")
            self.db = sqlite3.connect(f"file:{self.path}?mode=rw", uri=True, check_same_thread=False)
            self.db.execute("PRAGMA query_only=ON")  # read-write open: it can read a crashed server's WAL
        else:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.lock = ServerLock(self.folder / LOCK)
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.execute("PRAGMA foreign_keys=ON")
        self.db.row_factory = sqlite3.Row
        self._check_or_create(test_id, readonly)

    def _check_or_create(self, test_id: str, readonly: bool) -> None:
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables and not readonly:
            with self._transaction():
                for statement in TABLES.split(";"):
                    if statement.strip():
                        self.db.execute(statement)
                self.db.executemany("INSERT INTO meta VALUES (?, ?)", [("schema_version", SCHEMA_VERSION),
                                                                      ("test_id", test_id), ("created_at", now())])
            return
        if "meta" not in tables:
            self.close()
            raise StoreError(f"{self.path}: not a listening-serve database (no meta table)")
        meta = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("schema_version") != SCHEMA_VERSION:
            self.close()
            raise StoreError(f"{self.path}: database schema version {meta.get('schema_version')!r}, this clonebench "
                             f"reads version {SCHEMA_VERSION!r}; use the clonebench that wrote it")
        if meta.get("test_id") != test_id:
            self.close()
            raise StoreError(f"{self.path}: holds answers of test {meta.get('test_id')!r}, not {test_id!r}")

    def _transaction(self):
        store = self

        class _Tx:
            def __enter__(self):
                store._mutex.acquire()
                store.db.execute("BEGIN IMMEDIATE")

            def __exit__(self, kind, exc, tb):
                try:
                    if exc is None:
                        try:
                            store.db.execute("COMMIT")
                            return False
                        except (sqlite3.Error, OSError) as error:
                            exc = error
                    try:
                        store.db.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                    if _full(exc):
                        raise DiskFull("the disk (or the database) is full: the answer was not saved; free space "
                                       "on the server, then the rater can answer again") from None
                    if kind is None:
                        raise exc
                    return False
                finally:
                    store._mutex.release()
        return _Tx()

    def close(self) -> None:
        self.db.close()
        if self.lock:
            self.lock.release()

    # -- raters ----------------------------------------------------------------------------------------------------

    def add_rater(self, name: Callable[[int], str], token_sha256: str, seed: int, order: dict,
                  participant: str | None = None) -> str:
        """Insert a rater named ``name(raters so far)``; return the name. The participant check, the count and the
        insert are one transaction: of simultaneous joins of one participant exactly one succeeds, the others
        raise :class:`ParticipantTaken` (never the database's constraint error)."""
        with self._transaction():
            if participant is not None and self.db.execute("SELECT 1 FROM raters WHERE participant = ?",
                                                           (participant,)).fetchone():
                raise ParticipantTaken(f"participant {participant!r} has already started")
            rater_id = name(self.db.execute("SELECT COUNT(*) FROM raters").fetchone()[0])
            self.db.execute("INSERT INTO raters (rater_id, token_sha256, participant, seed, order_json, created_at) "
                            "VALUES (?, ?, ?, ?, ?, ?)",
                            (rater_id, token_sha256, participant, seed, json.dumps(order), now()))
        return rater_id

    def rater(self, token_sha256: str) -> dict | None:
        with self._mutex:
            row = self.db.execute("SELECT * FROM raters WHERE token_sha256 = ?", (token_sha256,)).fetchone()
        return _rater(row) if row else None

    def raters(self) -> list[dict]:
        with self._mutex:
            return [_rater(r) for r in self.db.execute("SELECT * FROM raters ORDER BY id")]

    def count(self) -> int:
        with self._mutex:
            return self.db.execute("SELECT COUNT(*) FROM raters").fetchone()[0]

    # -- answers ---------------------------------------------------------------------------------------------------

    def answers(self, rater: int) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {"training": [], "test": []}
        with self._mutex:
            rows = self.db.execute("SELECT phase, record FROM answers WHERE rater = ? ORDER BY phase, position",
                                   (rater,)).fetchall()
        for row in rows:
            out[row["phase"]].append(json.loads(row["record"]))
        return out

    def save_answer(self, rater: int, phase: str, record: dict, user_agent: str,
                    completion_code: str | None) -> None:
        """One transaction: the answer, the rater's start (first answer) and, with the last answer, the finish."""
        with self._transaction():
            self.db.execute("INSERT INTO answers VALUES (?, ?, ?, ?, ?, ?)",
                            (rater, phase, record["position"], record["trial"], json.dumps(record), now()))
            self.db.execute("UPDATE raters SET started_at = COALESCE(started_at, ?), user_agent = ? WHERE id = ?",
                            (now(), user_agent, rater))
            if completion_code:
                self.db.execute("UPDATE raters SET finished_at = ?, completion_code = ? WHERE id = ?",
                                (now(), completion_code, rater))

    def answer_counts(self) -> list[sqlite3.Row]:
        with self._mutex:
            return self.db.execute("SELECT trial, COUNT(*) AS n FROM answers WHERE phase = 'test' GROUP BY trial"
                                   ).fetchall()


def _rater(row: sqlite3.Row) -> dict:
    out = dict(row)
    out["order"] = json.loads(out.pop("order_json"))
    return out
