"""The integrity field of a ratings file: SHA-256 over the test's salt and the canonical JSON of the ratings
(keys sorted, no spaces, UTF-8), computed by the page and checked by ``listening-results``.

What it proves: the file is the one the page wrote, unedited and complete (a changed rating, a removed trial, a
truncated download or a file of another test fails). What it does not: the salt is in the page, so someone who
reads the page's code can compute a digest for a forged file; it detects edits, not a determined forger."""

from __future__ import annotations

import hashlib
import json

ALGORITHM = "sha256"


def canonical(payload) -> str:
    """The JSON text both sides hash: the page's ``canonical()`` writes the same for strings, integers, lists,
    objects and null, which is all a ratings file holds."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(salt: str, payload) -> str:
    return hashlib.sha256((salt + "\n" + canonical(payload)).encode("utf-8")).hexdigest()


def sealed(salt: str, payload: dict) -> dict:
    """A ratings file as the page writes it (used to write simulated raters' files)."""
    return {"ratings": payload, "integrity": {"algorithm": ALGORITHM, "digest": digest(salt, payload)}}
