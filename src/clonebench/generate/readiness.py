"""Before any synthesis request: wait for the servers to be ready, and check the references against the
adversary's own reference rule (e.g. vLLM-Omni's 1-30 s)."""

from __future__ import annotations

import asyncio
import logging
import time

import anyio
import httpx

from clonebench.adversary.base import Adversary
from clonebench.adversary.endpoints import EndpointPool
from clonebench.core.errors import ConfigError, ServerNotReadyError
from clonebench.core.records import Sample
from clonebench.core.redact import redact, redact_value
from clonebench.data.reference_length import reference_seconds

log = logging.getLogger(__name__)


def check_reference_durations(samples: list[Sample], adversary: Adversary) -> dict | None:
    """Refuse the run, naming every pair and the limit, when a reference is outside the server's rule."""
    rule = adversary.reference_rule()
    if rule is None:
        return None
    problems, seen = [], {}
    for sample in samples:
        duration = seen.get(sample.prompt.sha256)
        if duration is None:
            duration = seen[sample.prompt.sha256] = reference_seconds(sample)
        problem = rule.problem(duration)
        if problem:
            problems.append(f"{sample.pair_id}: reference {sample.prompt.label} {problem}")
    if problems:
        shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
        raise ConfigError(
            f"{len(problems)} reference(s) outside what {adversary.protocol} accepts ({rule.min_s:g}-{rule.max_s:g} s, "
            f"{rule.source}); the server would refuse them with a permanent 400:\n  " + "\n  ".join(shown)
            + "\nSelect other pairs (dataset.*), or set adversary.reference_duration_check=false for a server "
            "without this limit")
    return {"min_s": rule.min_s, "max_s": rule.max_s, "source": rule.source, "checked": len(seen)}


async def probe_ready(adversary, http: httpx.AsyncClient, url: str) -> dict:
    """``adversary.check_ready`` within ``adversary.timeout`` in all; whatever a server's answer makes the probe
    raise (a dripping, malformed or oversized answer) is a ServerNotReadyError naming it, never a crash."""
    try:
        with anyio.fail_after(adversary.client.timeout):
            return await adversary.check_ready(http, url)
    except ServerNotReadyError:
        raise
    except Exception as exc:
        reason = f"no answer within adversary.timeout={adversary.client.timeout:g} s" \
            if isinstance(exc, TimeoutError) else repr(exc)
        raise ServerNotReadyError(f"{adversary.protocol} server not ready: the readiness probe of {url} failed on "
                                  f"the server's answer: {reason}") from exc


async def wait_until_ready(adversary: Adversary, http: httpx.AsyncClient, pool: EndpointPool,
                           ready_timeout: float) -> dict:
    """Poll every endpoint's readiness with backoff until one is ready or ``ready_timeout`` passes.

    A server still loading its model refuses connections (Fish, s2.cpp) or answers 5xx: polled again, with a
    progress line. An answer that will not change by waiting (401, a wrong route) fails at once. Endpoints
    still not ready once another one is are taken out (the last active endpoint never is).
    """
    started = time.monotonic()
    answers: dict[str, object] = {}
    delay = 0.5
    while True:
        pending = [u for u in pool.active if not isinstance(answers.get(u), dict)]
        for url in pending:
            try:
                answers[url] = redact_value(await probe_ready(adversary, http, url))
            except ServerNotReadyError as exc:
                answers[url] = exc
        ready = [u for u in pool.active if isinstance(answers.get(u), dict)]
        waiting = [u for u in pool.active if isinstance(answers.get(u), ServerNotReadyError)
                   and getattr(answers[u], "may_recover", False)]
        elapsed = time.monotonic() - started
        if ready or not waiting or elapsed >= ready_timeout:
            break
        last = redact(str(answers[waiting[0]]))
        log.warning("waiting for %d endpoint(s) to become ready (%.0f of %.0f s, adversary.ready_timeout): %s",
                    len(waiting), elapsed, ready_timeout, last[:300])
        await asyncio.sleep(min(delay, max(0.0, ready_timeout - elapsed)))
        delay = min(delay * 2, 10.0)
    readiness = {}
    for url in list(pool.active):
        answer = answers.get(url)
        if isinstance(answer, dict):
            readiness[redact(url)] = answer
            continue
        waited = time.monotonic() - started
        message = redact(str(answer)) + (f" (still not ready after {waited:.0f} s of polling; "
                                                     "adversary.ready_timeout)" if waited >= 1 else "")
        readiness[redact(url)] = {"error": message}
        if not pool.eject(url, f"not ready: {message}"):
            raise ServerNotReadyError(message)
    return readiness
