"""Faults the stand-in injects, one per incoming /v1/tts request, in the order they were queued.

Kinds:
- ``status``: answer ``code`` (with ``retry_after`` as a Retry-After header, and the Fish envelope);
- ``delay``: sleep ``seconds`` then answer normally (longer than the client's timeout: a read timeout);
- ``reset``: read the request, then reset the connection (RST) without a response;
- ``truncate``: send a 200 header and part of the chunked body, then close;
- ``not_wav``: 200 with a body that is not audio;
- ``nan``: 200 with a float WAV that holds NaN samples;
- ``ignore_reference``: synthesize in a fixed voice, as a server with an empty reference folder does;
- ``wav_truncated_header``: 200 with a WAV whose data chunk declares more bytes than it has.
- hostile answers (``oversized``, ``endless``, ``drip``, ``compressed_bomb``, ``bad_header``, ``ansi``,
  ``echo_headers``): see ``hostile.py``;
- ``none``: no fault (queue it first to let N requests through, e.g. a reference check's);
- ``behave``: a valid 200 answer with bad content, as a failing cloning model gives: ``"as"`` is one of
  ``loop``, ``truncate``, ``prompt_copy``, ``silence`` (see ``behaviours.py``; ``--behaviours`` picks them by
  fraction instead, deterministically per text/reference pair);
A fault with ``"times": N`` applies to the next N requests.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from clonebench.standin.behaviours import check_name as check_behaviour
from clonebench.standin.hostile import KINDS as HOSTILE_KINDS

KINDS = frozenset({"none", "status", "delay", "reset", "truncate", "not_wav", "nan", "ignore_reference",
                   "wav_truncated_header"}) | HOSTILE_KINDS
KINDS = KINDS | {"empty"}  # cosyvoice / zonos2: 200 with an empty body (CosyVoice issue #1805)
KINDS = KINDS | {"model_error"}  # cosyvoice: 200, then the chunked stream breaks before its first byte
KINDS = KINDS | {"behave"}  # a failure behaviour (behaviours.py), named by the fault's "as"


def check_fault(fault: dict) -> None:
    if fault.get("kind") not in KINDS:
        raise ValueError(f"unknown fault kind {fault.get('kind')!r}; known: {sorted(KINDS)}")
    if fault["kind"] == "behave":
        check_behaviour(fault.get("as"))


@dataclass
class FaultPlan:
    queue: list[dict] = field(default_factory=list)
    sticky: dict | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, faults: list[dict]) -> None:
        for fault in faults:
            check_fault(fault)
        with self.lock:
            for fault in faults:
                self.queue.extend([dict(fault)] * int(fault.get("times", 1)))

    def set_sticky(self, fault: dict | None) -> None:
        """A fault applied to every request once the queue is empty (e.g. always ignore the reference)."""
        if fault is not None:
            check_fault(fault)
        with self.lock:
            self.sticky = fault

    def next(self) -> dict | None:
        with self.lock:
            return self.queue.pop(0) if self.queue else self.sticky

    def clear(self) -> None:
        with self.lock:
            self.queue.clear()
            self.sticky = None
