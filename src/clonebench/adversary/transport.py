"""Sending one prepared request with retries, classifying and journaling every attempt.

Classification:
- transient (retried): connect errors and timeouts (request not sent), HTTP 408 425 429 500 502 503 504;
- unknown_outcome (retried, and recorded as such): the request was sent but the response was lost:
  read timeout, connection reset or closed after the body was written, a body cut short;
- permanent (not retried): 3xx, any other 4xx/5xx, a 2xx whose body is not a valid WAV, an answer over
  ``adversary.max_response_bytes`` or in an encoding the client did not ask for (``bounded.py``).
Backoff is tenacity's exponential backoff with jitter; a ``Retry-After`` header (seconds or
HTTP date) lengthens the wait up to ``retry_max_delay``; a malformed one is ignored (normal backoff).
``RetryPolicy.deadline`` (``adversary.timeout``) bounds each whole attempt, connect to last byte: a server
that drips its answer fails at the deadline (``AttemptDeadline``, an unknown outcome) however quick each read is.
Nothing a server sends raises out of ``send``: every answer ends as an ok or a classified failed attempt.
"""

from __future__ import annotations

import datetime
import email.utils
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import httpx
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from clonebench.adversary.base import PreparedRequest
from clonebench.adversary.bounded import ResponseRefused
from clonebench.adversary.endpoints import EndpointPool
from clonebench.data.audio import InvalidAudio, WavInfo, validate_wav
from clonebench.hashing import sha256_bytes
from clonebench.records import Attempt
from clonebench.redact import redact

TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
# the total deadline fires this much after adversary.timeout, so that a server silent for the whole timeout is
# journaled as the ReadTimeout it is (httpx's idle timeout fires first) and a dripping one as AttemptDeadline
DEADLINE_GRACE_S = 0.1


class AttemptFailed(Exception):
    def __init__(self, outcome: str, error_class: str, message: str, status_code: int | None = None,
                 retry_after: float | None = None):
        super().__init__(message)
        self.outcome = outcome
        self.error_class = error_class
        self.status_code = status_code
        self.retry_after = retry_after


class RetryableFailure(AttemptFailed):
    """A transient or unknown-outcome failure: worth another attempt."""


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int
    initial_delay: float
    max_delay: float
    deadline: float | None = None  # seconds one whole attempt may take (adversary.timeout); None: no total bound

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
        raise RetryableFailure("unknown_outcome", type(exc).__name__,
                               f"request sent, response lost: {exc!r}") from exc
    except httpx.HTTPError as exc:  # any other transport failure a server can cause (e.g. a close error)
        raise RetryableFailure("unknown_outcome", type(exc).__name__, f"request sent, response lost: {exc!r}") from exc
    attempt.status_code = code
    attempt.response_bytes = len(body)
    attempt.response_sha256 = sha256_bytes(body)
    if code in TRANSIENT_STATUS:
        retry_after = parse_retry_after(headers.get("retry-after"))
        attempt.retry_after_s = retry_after
        raise RetryableFailure("transient", f"HTTP{code}", f"HTTP {code}: {_summarise(body)}", code, retry_after)
    if not 200 <= code < 300:
        raise AttemptFailed("permanent", f"HTTP{code}", f"HTTP {code}: {_summarise(body)}", code)
    try:
        if request.to_wav is not None:
            body = request.to_wav(body)
        return body, validate_wav(body)
    except InvalidAudio as exc:
        raise AttemptFailed("permanent", "InvalidAudio", f"HTTP {code} but {exc}", code) from exc
    except Exception as exc:  # whatever else the server's bytes make a reader raise: a failed attempt, not a crash
        raise AttemptFailed("permanent", "InvalidAudio", f"HTTP {code} but the body cannot be read as audio: "
                            f"{type(exc).__name__}: {exc}", code) from exc


async def send(
    http: httpx.AsyncClient,
    request: PreparedRequest,
    policy: RetryPolicy,
    on_start: Callable[[Attempt], None],
    on_end: Callable[[Attempt], None],
    pool: EndpointPool | None = None,
) -> tuple[bytes, WavInfo, list[Attempt]]:
    """Send ``request`` until it succeeds, fails permanently, or runs out of attempts.

    With a ``pool`` each attempt goes to the endpoint it picks (avoiding the ones that already failed this
    request). Returns the body, its WAV description and every attempt; raises the last AttemptFailed
    otherwise (with ``.attempts`` set).
    """
    attempts: list[Attempt] = []
    failed_endpoints: set[str] = set()
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
                    body, info = await _one_attempt(http, request, attempt, policy.deadline)
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
