"""Several endpoints of one model (one per GPU server or worker): least-outstanding-requests dispatch.

Each attempt goes to the active endpoint with the fewest requests in flight (ties: the one used least
recently), avoiding endpoints that already failed this request when another is available. An endpoint
that fails its readiness probe, or fails transiently ``eject_after`` times in a row, is taken out with a
logged (and journaled) reason; the last active endpoint is never taken out.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class EndpointPool:
    def __init__(self, urls: list[str], eject_after: int, on_eject: Callable[[str, str], None] | None = None):
        self.active = list(dict.fromkeys(urls))
        self.outstanding = {u: 0 for u in self.active}
        self.consecutive_failures = {u: 0 for u in self.active}
        self.last_used = {u: -1 for u in self.active}
        self.ejected: dict[str, str] = {}
        self.eject_after = eject_after
        self.on_eject = on_eject
        self._clock = itertools.count()
        self._lock = threading.Lock()

    def eject(self, url: str, reason: str) -> bool:
        with self._lock:
            if url not in self.active or len(self.active) == 1:
                return False
            self.active.remove(url)
            self.ejected[url] = reason
        log.warning("endpoint %s taken out: %s", url, reason)
        if self.on_eject:
            self.on_eject(url, reason)
        return True

    def acquire(self, avoid: set[str] = frozenset()) -> str:
        with self._lock:
            candidates = [u for u in self.active if u not in avoid] or list(self.active)
            url = min(candidates, key=lambda u: (self.outstanding[u], self.last_used[u]))
            self.outstanding[url] += 1
            self.last_used[url] = next(self._clock)
            return url

    def release(self, url: str, outcome: str) -> None:
        with self._lock:
            self.outstanding[url] -= 1
            if outcome == "ok":
                self.consecutive_failures[url] = 0
                return
            if outcome not in ("transient", "unknown_outcome"):
                return  # a permanent failure says something about the request, not the endpoint
            self.consecutive_failures[url] += 1
            failures = self.consecutive_failures[url]
        if failures >= self.eject_after:
            self.eject(url, f"{failures} transient failures in a row")
