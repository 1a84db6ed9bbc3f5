"""What an HTTP error answer means, for the transport's early stop on a repeated 500 (``transport.send``).

Two attempts of one request that fail the same way rarely answer the same bytes: a multi-instance Triton names the
instance that served each attempt, a Python traceback holds memory addresses, servers add request ids and times.
So errors are compared by meaning: the status and the body's text with those parts set aside (``VOLATILE``, and the
protocol's own through ``PreparedRequest.error_key``). Hand-written: no library normalises servers' error texts."""

from __future__ import annotations

import re
from collections.abc import Callable

from clonebench.core.hashing import sha256_bytes

# what differs between two attempts of one request that fail the same way (error_meaning)
VOLATILE = ((re.compile(r"0x[0-9a-fA-F]+"), "0x?"),
            (re.compile(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"), "<uuid>"),
            (re.compile(r"\b[0-9a-fA-F]{16,}\b"), "<id>"),
            (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "<time>"))
MEANING_CHARS = 4096


def error_meaning(status: int, body: bytes, key: Callable[[str], str] | None = None) -> str:
    """What an HTTP error answer means, as a digest: its status and its text (the first MEANING_CHARS characters)
    with the parts that change between attempts of one request set aside (``VOLATILE``, and ``key``: the
    protocol's own, e.g. Triton's model instance names). Two attempts with one meaning failed the same way."""
    text = body.decode("utf-8", "replace")[:MEANING_CHARS]
    if key is not None:
        text = key(text)
    for pattern, stand_in in VOLATILE:
        text = pattern.sub(stand_in, text)
    return sha256_bytes(f"{status}\n{text}".encode())
