"""Sending one prepared request with retries, classifying and journaling every attempt.

Classification:
- transient (retried): connect errors and timeouts (request not sent), HTTP 408 425 429 500 502 503 504;
- unknown_outcome (retried, and recorded as such): the request was sent but the response was lost:
  read timeout, connection reset or closed after the body was written, a body cut short;
- permanent (not retried): 3xx, any other 4xx/5xx, a 2xx whose body is not a valid WAV, an answer over
  ``adversary.max_response_bytes`` or in an encoding the client did not ask for (``bounded.py``), and a 2xx
  whose body breaks before its first byte from a server that sends its 200 before its model runs
  (``PreparedRequest.failed_before_audio``: its model failed, as an empty 200 says);
Backoff is tenacity's exponential backoff with jitter; a ``Retry-After`` header (seconds or
HTTP date) lengthens the wait up to ``retry_max_delay``; a malformed one is ignored (normal backoff).
``RetryPolicy.deadline`` (``adversary.timeout``) bounds each whole attempt, connect to last byte: a server
that drips its answer fails at the deadline (``AttemptDeadline``, an unknown outcome) however quick each read is.
Nothing a server sends raises out of ``send``: every answer ends as an ok or a classified failed attempt.

Two refinements (``send``):
- busy: where the protocol says a status means "busy, one synthesis at a time" (s2.cpp's 503), the
  same attempt waits and resends, for at most ``busy_max_wait`` seconds, without spending an attempt;
  each busy answer is reported through ``on_busy``;
- a 500 that means what the previous attempt's 500 meant stops early as permanent: the server fails
  deterministically on this request (Fish: "No audio generated", model errors). Errors are compared by meaning
  (``error_meaning``: the status and the body's text with what changes between attempts of one request set
  aside: memory addresses, UUIDs, long hex ids, times, and the protocol's own per-attempt names through
  ``PreparedRequest.error_key``, e.g. the Triton model instance that served it), never by raw bytes. The model
  is the request's, the same on every attempt.
A response cut short after its status line keeps that status and the partial body's size and sha256
on the attempt, and says that the server failed after starting the response.
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import email.utils
import hashlib
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import httpx
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from clonebench.adversary.base import PreparedRequest
from clonebench.adversary.bounded import ResponseRefused
from clonebench.adversary.endpoints import EndpointPool
from clonebench.adversary.error_meaning import error_meaning
from clonebench.core.hashing import sha256_bytes
from clonebench.core.records import Attempt
from clonebench.core.redact import redact
from clonebench.data.audio import InvalidAudio, WavInfo, validate_wav

TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
# the total deadline fires this much after adversary.timeout, so that a server silent for the whole timeout is
# journaled as the ReadTimeout it is (httpx's idle timeout fires first) and a dripping one as AttemptDeadline
DEADLINE_GRACE_S = 0.1


class AttemptFailed(Exception):
    def __init__(self, outcome: str, error_class: str, message: str, status_code: int | None = None,
                 retry_after: float | None = None, meaning: str | None = None):
        super().__init__(message)
        self.outcome = outcome
        self.error_class = error_class
        self.status_code = status_code
        self.retry_after = retry_after
        self.meaning = meaning  # error_meaning() of an HTTP error answer


class RetryableFailure(AttemptFailed):
    """A transient or unknown-outcome failure: worth another attempt."""


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int
    initial_delay: float
    max_delay: float
    deadline: float | None = None  # seconds one whole attempt may take (adversary.timeout); None: no total bound
    busy_status: int | None = None   # a status that means "busy": resent without spending an attempt
    busy_max_wait: float = 0.0       # seconds one attempt may spend resending busy answers

    def wait(self):
        backoff = wait_exponential_jitter(multiplier=self.initial_delay, max=self.max_delay, jitter=self.initial_delay)

        def compute(state) -> float:
            base = backoff(state)
            exc = state.outcome.exception() if state.outcome else None
            retry_after = getattr(exc, "retry_after", None)
            return max(base, min(retry_after, self.max_delay)) if retry_after else base
        return compute


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta-seconds or an HTTP date); None when malformed."""
    value = (value or "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
            if parsed.tzinfo is None:  # HTTP dates are GMT
                parsed = parsed.replace(tzinfo=datetime.timezone.utc)
            seconds = parsed.timestamp() - time.time()
        except (TypeError, ValueError, OverflowError, IndexError, OSError):
            return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


_CURRENT_ATTEMPT: contextvars.ContextVar[Attempt | None] = contextvars.ContextVar("clonebench_attempt", default=None)


class _CountingStream(httpx.AsyncByteStream):
    """The response body as received, counted and hashed, so that a body cut short still leaves its facts."""

    def __init__(self, inner, attempt: Attempt):
        self.inner, self.attempt, self.digest = inner, attempt, hashlib.sha256()
        attempt.response_bytes = 0

    async def __aiter__(self):
        async for chunk in self.inner:
            self.attempt.response_bytes += len(chunk)
            self.digest.update(chunk)
            self.attempt.response_sha256 = self.digest.hexdigest()
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _note_response_start(response: httpx.Response) -> None:
    """httpx response hook (runs when the status line and headers arrive, before the body is read)."""
    attempt = _CURRENT_ATTEMPT.get()
    if attempt is not None:
        attempt.status_code = response.status_code
        response.stream = _CountingStream(response.stream, attempt)


def watch_responses(http: httpx.AsyncClient) -> None:
    """Install the hook that notes each attempt's status as soon as it arrives (idempotent)."""
    hooks = http.event_hooks
    if _note_response_start not in hooks["response"]:
        hooks["response"] = [*hooks["response"], _note_response_start]
        http.event_hooks = hooks


def _summarise(body: bytes) -> str:
    text = body[:300].decode("utf-8", "replace").replace("\n", " ")
    return redact(text + ("..." if len(body) > 300 else ""))


async def _exchange(http: httpx.AsyncClient, request: PreparedRequest, attempt: Attempt) -> tuple[int, httpx.Headers, bytes]:
    """Send once; status, headers and body. A streamed request notes the time to its first body byte."""
    url = attempt.endpoint or request.url
    if not request.stream:
        response = await http.request(request.method, url, content=request.content, headers=request.headers)
        return response.status_code, response.headers, response.content
    started = time.perf_counter()
    async with http.stream(request.method, url, content=request.content, headers=request.headers) as response:
        chunks = []
        async for chunk in response.aiter_bytes():
            if chunk and attempt.ttfb_s is None:
                attempt.ttfb_s = time.perf_counter() - started
            chunks.append(chunk)
        return response.status_code, response.headers, b"".join(chunks)


async def _one_attempt(http: httpx.AsyncClient, request: PreparedRequest, attempt: Attempt,
                       deadline: float | None = None) -> tuple[bytes, WavInfo]:
    attempt.status_code = attempt.response_bytes = attempt.response_sha256 = None
    token = _CURRENT_ATTEMPT.set(attempt)
    try:
        with anyio.fail_after(None if deadline is None else deadline + DEADLINE_GRACE_S):
            code, headers, body = await _exchange(http, request, attempt)
    except TimeoutError as exc:
        raise RetryableFailure("unknown_outcome", "AttemptDeadline",
                               f"no complete answer within adversary.timeout={deadline:g} s (a total deadline for "
                               "the attempt: connect, send, wait and read); request sent, response lost") from exc
    except ResponseRefused as exc:
        attempt.response_bytes = getattr(exc, "bytes_read", None)  # what was read before refusing (at most the cap)
        raise AttemptFailed("permanent", exc.error_class, str(exc)) from exc
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
        raise RetryableFailure("transient", type(exc).__name__, f"not sent: {exc!r}") from exc
    except (httpx.ReadTimeout, httpx.ReadError, httpx.RemoteProtocolError, httpx.WriteError,
            httpx.WriteTimeout) as exc:
        if request.failed_before_audio and attempt.status_code is not None and 200 <= attempt.status_code < 300 \
                and not attempt.response_bytes:  # this server sends its 200 before its model runs: no audio came
            raise AttemptFailed("permanent", "InvalidAudio", f"HTTP {attempt.status_code} but the body broke before "
                                f"its first byte: {request.failed_before_audio} ({exc!r})", attempt.status_code) from exc
        if attempt.status_code is not None:  # the status line arrived: the server failed mid-response
            raise RetryableFailure(
                "unknown_outcome", type(exc).__name__,
                f"the server answered HTTP {attempt.status_code}, then failed after starting the stream: body cut "
                f"after {attempt.response_bytes or 0} bytes ({exc!r})", attempt.status_code) from exc
        raise RetryableFailure("unknown_outcome", type(exc).__name__,
                               f"request sent, response lost: {exc!r}") from exc
    except httpx.HTTPError as exc:  # any other transport failure a server can cause (e.g. a close error)
        raise RetryableFailure("unknown_outcome", type(exc).__name__, f"request sent, response lost: {exc!r}") from exc
    finally:
        _CURRENT_ATTEMPT.reset(token)
    attempt.status_code = code
    attempt.response_bytes = len(body)
    attempt.response_sha256 = sha256_bytes(body)
    explained = request.describe_error(code, body) if request.describe_error and not 200 <= code < 300 else None
    if explained:
        body_text = f"{explained}; body {_summarise(body)}"
    if code in TRANSIENT_STATUS:
        retry_after = parse_retry_after(headers.get("retry-after"))
        attempt.retry_after_s = retry_after
        raise RetryableFailure("transient", f"HTTP{code}", f"HTTP {code}: {body_text if explained else _summarise(body)}",
                               code, retry_after, error_meaning(code, body, request.error_key))
    if not 200 <= code < 300:
        raise AttemptFailed("permanent", f"HTTP{code}", f"HTTP {code}: {body_text if explained else _summarise(body)}",
                            code)
    try:
        if request.to_wav is not None:
            body = request.to_wav(body)
        return body, validate_wav(body)
    except InvalidAudio as exc:
        raise AttemptFailed("permanent", "InvalidAudio", f"HTTP {code} but {exc}", code) from exc
    except Exception as exc:  # whatever else the server's bytes make a reader raise: a failed attempt, not a crash
        raise AttemptFailed("permanent", "InvalidAudio", f"HTTP {code} but the body cannot be read as audio: "
                            f"{type(exc).__name__}: {exc}", code) from exc


async def _attempt_while_busy(http: httpx.AsyncClient, request: PreparedRequest, attempt: Attempt,
                              policy: RetryPolicy, on_busy: Callable[[Attempt, float], None] | None):
    """One attempt; a busy answer (``policy.busy_status``) is resent after a short wait, up to ``busy_max_wait``."""
    waited, delay = 0.0, max(0.05, min(policy.initial_delay, 1.0))
    while True:
        try:
            return await _one_attempt(http, request, attempt, policy.deadline)
        except RetryableFailure as exc:
            if policy.busy_status is None or exc.status_code != policy.busy_status or exc.outcome != "transient" \
                    or waited >= policy.busy_max_wait:
                if policy.busy_status is not None and exc.status_code == policy.busy_status and waited:
                    exc.args = (f"{exc} (busy for {waited:.1f} s, above the {policy.busy_max_wait:g} s allowed per "
                                "attempt)",)
                raise
            pause = min(delay * (0.5 + random.random()), policy.busy_max_wait - waited)
            if on_busy:
                on_busy(attempt, round(pause, 3))
            await asyncio.sleep(max(pause, 0.0))
            waited += pause
            delay = min(delay * 2, 5.0)


async def send(
    http: httpx.AsyncClient,
    request: PreparedRequest,
    policy: RetryPolicy,
    on_start: Callable[[Attempt], None],
    on_end: Callable[[Attempt], None],
    pool: EndpointPool | None = None,
    on_busy: Callable[[Attempt, float], None] | None = None,
) -> tuple[bytes, WavInfo, list[Attempt]]:
    """Send ``request`` until it succeeds, fails permanently, or runs out of attempts.

    With a ``pool`` each attempt goes to the endpoint it picks (avoiding the ones that already failed this
    request). Returns the body, its WAV description and every attempt; raises the last AttemptFailed
    otherwise (with ``.attempts`` set).
    """
    watch_responses(http)
    attempts: list[Attempt] = []
    failed_endpoints: set[str] = set()
    last_500: list[str | None] = [None]
    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.attempts),
        wait=policy.wait(),
        retry=retry_if_exception_type(RetryableFailure),
        reraise=True,
    )
    try:
        async for attempt_ctx in retrying:
            with attempt_ctx:
                endpoint = pool.acquire(failed_endpoints) if pool else request.url
                attempt = Attempt(attempt=len(attempts) + 1, started_at=time.time(), request_bytes=len(request.content),
                                  request_sha256=request.sha256, endpoint=endpoint)
                attempts.append(attempt)
                on_start(attempt)
                started = time.perf_counter()
                try:
                    try:
                        body, info = await _attempt_while_busy(http, request, attempt, policy, on_busy)
                    except RetryableFailure as exc:
                        repeated = exc.status_code == 500 and exc.meaning is not None \
                            and exc.meaning == last_500[0]
                        last_500[0] = exc.meaning if exc.status_code == 500 else None
                        if repeated:  # the server fails the same way twice: deterministic, not worth more attempts
                            raise AttemptFailed(
                                "permanent", exc.error_class,
                                f"{exc} (stopped early: the same HTTP 500 error as the previous attempt, compared "
                                "by meaning (status and text, per-attempt ids and instance names set aside), so "
                                "the server fails deterministically on this request)", 500,
                                meaning=exc.meaning) from exc
                        raise
                    attempt.outcome = "ok"
                except AttemptFailed as exc:
                    attempt.outcome, attempt.error_class, attempt.error = exc.outcome, exc.error_class, str(exc)
                    raise
                except BaseException as exc:  # cancelled or interrupted mid-attempt
                    attempt.outcome, attempt.error_class = "aborted", type(exc).__name__
                    raise
                finally:
                    attempt.duration_s = time.perf_counter() - started
                    attempt.ended_at = time.time()
                    if pool:
                        pool.release(endpoint, attempt.outcome)
                        if attempt.outcome != "ok":
                            failed_endpoints.add(endpoint)
                    on_end(attempt)
                return body, info, attempts
    except AttemptFailed as exc:
        exc.attempts = attempts
        raise
    raise AssertionError("unreachable: tenacity either returns or re-raises")
