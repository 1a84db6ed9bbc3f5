"""One request of a serving run: sent once (no retries: a retry would hide what a listener waits for), its body
read as it arrives, each chunk's arrival time and size noted, and the time of the first decodable audio sample.

Times are the client's ``time.perf_counter`` from just before the request is handed to httpx (connection set-up
included) to: the first body byte (TTFB; headers excluded), the first chunk after which the protocol's decoder
(``adversary/stream_decode.py``) holds at least one whole audio sample (TTFA), and the last byte (total).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import anyio
import httpx

from clonebench.adversary.base import PreparedRequest
from clonebench.adversary.bounded import ResponseRefused
from clonebench.adversary.stream_decode import StreamNotAudio
from clonebench.core.hashing import sha256_bytes
from clonebench.core.redact import redact
from clonebench.data.audio import validate_wav
from clonebench.serving.player import play

ERROR_BODY_BYTES = 300


@dataclass
class RequestRecord:
    sample_id: str
    phase: str                         # cold | warmup | ramp | measured
    started_s: float                   # since the start of its level (or of the run, for cold and warm-up)
    scheduled_s: float | None = None   # open loop: the planned arrival time, since the start of the level
    ok: bool = False
    status_code: int | None = None
    error_class: str | None = None
    error: str | None = None
    ttfb_s: float | None = None
    ttfa_s: float | None = None
    total_s: float | None = None
    audio_s: float | None = None
    rtf: float | None = None
    player: dict | None = None         # the simulated 1x player (streamed answers only)
    audio_sha256: str | None = None    # of the validated WAV (quality under load compares them)
    under_load_wav: str | None = None  # kept when it differs from the pair's answer sent alone
    # every chunk as received: milliseconds since the request started, bytes, decodable audio ms so far (streamed
    # answers only)
    chunks: dict = field(default_factory=lambda: {"t_ms": [], "bytes": [], "audio_ms": []})
    body: bytes | None = field(default=None, repr=False)  # kept only when asked (quality under load)

    def as_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k != "body"}
        for key in ("started_s", "scheduled_s", "ttfb_s", "ttfa_s", "total_s", "audio_s", "rtf"):
            if out[key] is not None:
                out[key] = round(out[key], 6)
        return out


def streamed(request: PreparedRequest) -> bool:
    """Does the server stream this answer (read chunk by chunk, with a player), or hand it over whole?"""
    return request.stream and request.decoder is not None


def _fail(record: RequestRecord, error_class: str, message: str) -> RequestRecord:
    record.ok, record.error_class, record.error = False, error_class, redact(message)[:400]
    return record


async def measure_request(http: httpx.AsyncClient, request: PreparedRequest, record: RequestRecord,
                          deadline_s: float, prebuffer_s: float, keep_body: bool = False) -> RequestRecord:
    """Send ``request`` once and fill ``record``; every failure is classified on the record, never raised."""
    decoder = request.decoder() if streamed(request) else None  # None: a one-shot answer, handed over whole
    times, sizes, audio_ms, parts = record.chunks["t_ms"], record.chunks["bytes"], record.chunks["audio_ms"], []
    started = time.perf_counter()
    try:
        with anyio.fail_after(deadline_s):
            async with http.stream(request.method, request.url, content=request.content,
                                   headers=request.headers) as response:
                record.status_code = response.status_code
                async for chunk in response.aiter_bytes():
                    now = time.perf_counter() - started
                    if not chunk:
                        continue
                    parts.append(chunk)
                    if not 200 <= response.status_code < 300:
                        if sum(map(len, parts)) > ERROR_BODY_BYTES:
                            break
                        continue
                    record.ttfb_s = now if record.ttfb_s is None else record.ttfb_s
                    times.append(round(now * 1000, 3))
                    sizes.append(len(chunk))
                    if decoder is not None:
                        samples = decoder.feed(chunk)
                        if samples and record.ttfa_s is None:
                            record.ttfa_s = now
                        audio_ms.append(round(decoder.seconds * 1000, 3))
        record.total_s = time.perf_counter() - started
        if decoder is None and 200 <= record.status_code < 300:
            record.ttfa_s = record.total_s
    except TimeoutError:
        return _fail(record, "Deadline", f"no complete answer within adversary.timeout={deadline_s:g} s")
    except StreamNotAudio as exc:
        return _fail(record, "NotAudio", str(exc))
    except ResponseRefused as exc:
        return _fail(record, exc.error_class, str(exc))
    except httpx.HTTPError as exc:
        return _fail(record, type(exc).__name__, f"{exc!r} after {sum(sizes)} body bytes")
    body = b"".join(parts)
    if not 200 <= record.status_code < 300:
        return _fail(record, f"HTTP{record.status_code}",
                     f"HTTP {record.status_code}: {body[:ERROR_BODY_BYTES].decode('utf-8', 'replace')}")
    try:  # the whole answer must be the audio it claimed to be (outside the timed part)
        wav = request.to_wav(body) if request.to_wav else body
        info = validate_wav(wav)
    except Exception as exc:  # whatever a server's bytes make a reader raise: a failed request, not a crash
        return _fail(record, "InvalidAudio", f"HTTP {record.status_code} but {type(exc).__name__}: {exc}")
    record.ok = True
    record.audio_sha256 = sha256_bytes(wav)
    record.audio_s = info.duration_s
    record.rtf = record.total_s / info.duration_s if info.duration_s else None
    if decoder is not None:
        result = play(list(zip((t / 1000 for t in times), (a / 1000 for a in audio_ms))), prebuffer_s)
        record.player = result.as_dict() if result else None
    if keep_body:
        record.body = wav
    return record
