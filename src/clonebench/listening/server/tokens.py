"""Rater and admin tokens: ``secrets.token_urlsafe(32)`` (256 bits), shown once, stored only as their SHA-256.

A token is read from an ``Authorization: Bearer`` header (never from a URL the server sees: the rater's link
carries it in the fragment, which browsers do not send), compared by digest, and never logged."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import threading
import time
from pathlib import Path

from clonebench.core.errors import ClonebenchError

TOKEN = re.compile(r"[A-Za-z0-9_-]{20,128}")


def new_token() -> str:
    return secrets.token_urlsafe(32)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header, or None (malformed, absent)."""
    if not header or not header.startswith("Bearer "):
        return None
    token = header[len("Bearer "):].strip()
    return token if TOKEN.fullmatch(token) else None


def same(token: str | None, expected_digest: str) -> bool:
    return token is not None and hmac.compare_digest(digest(token), expected_digest)


def write_private(path: Path, text: str) -> None:
    """A file only its owner can read (0600 from its creation, never world-readable for a moment)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def admin_token(path: Path | None, default: Path) -> tuple[str, str]:
    """(admin token, where it is): read from ``--admin-token-file``, else the one in ``default``, else a new one
    written there (0600)."""
    source = path or default
    if source.exists():
        token = source.read_text(encoding="utf-8").strip()
        if not TOKEN.fullmatch(token):
            raise ClonebenchError(f"{source}: not an admin token (20-128 characters A-Z a-z 0-9 _ -); "
                                  "write one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'")
        return token, str(source)
    if path is not None:
        raise ClonebenchError(f"--admin-token-file {path}: no such file")
    token = new_token()
    write_private(default, token + "\n")
    return token, str(default)


class RateBound:
    """At most ``burst`` requests at once per key, refilled at ``per_second`` (a token bucket per rater token)."""

    def __init__(self, per_second: float = 10.0, burst: int = 40):
        self.per_second, self.burst = per_second, burst
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def allow(self, key: str) -> bool:
        now = time.monotonic()
        with self._lock:
            level, then = self._buckets.get(key, (float(self.burst), now))
            level = min(float(self.burst), level + (now - then) * self.per_second)
            if level < 1:
                self._buckets[key] = (level, now)
                return False
            self._buckets[key] = (level - 1, now)
            if len(self._buckets) > 100_000:  # bounded memory: forget the fullest buckets' history
                self._buckets.clear()
            return True
