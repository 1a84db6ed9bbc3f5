"""A scripted streaming profile for the stand-in (``--stream-profile``), so that serving runs are checked against a
known truth: when each chunk of a streamed answer leaves the server.

A request that finds ``n`` requests in flight (itself included) is slowed by ``factor = 1 + slowdown * (n - 1)``
for its whole life. Its answer is cut into chunks of ``chunk`` audio seconds (``schedule=fixed``; the last one
shorter) or one chunk per sentence of its text, sized by the sentence's share of the characters
(``schedule=sentence``). Chunk 0 leaves ``factor * first`` seconds after the request was read; chunk k leaves
``factor * (first + rtf * audio seconds of chunks 1..k)`` after it, plus a seeded jitter in [0, ``jitter``)
(never before the previous chunk). With ``drift=1`` a request that shares the server is synthesized with another
seed (its seed mixed with the count in flight): a batching server whose audio changes under load. A one-shot answer leaves whole at the time its last chunk would. The audio is
the stand-in's usual one; only its timing is scripted.
"""

from __future__ import annotations

import io
import re
import threading
import time
from dataclasses import dataclass, fields

import numpy as np
import soundfile as sf

SENTENCE_END = re.compile(r"(?<=[.!?;\u3002\uff01\uff1f])\s*")


@dataclass(frozen=True)
class StreamProfile:
    first: float = 0.2        # seconds to the first chunk (alone)
    rtf: float = 0.5          # seconds to make one second of audio after the first chunk (alone)
    slowdown: float = 0.0     # extra share of time per other request in flight
    jitter: float = 0.0       # seconds: uniform [0, jitter) added to each chunk's departure
    chunk: float = 1.0        # audio seconds per chunk (schedule=fixed)
    schedule: str = "fixed"   # fixed | sentence
    audio: float = 0.0        # seconds of every answer, with --tone (0: the tone's own length, from the text)
    drift: float = 0.0        # 1: a request sharing the server is synthesized with its seed mixed with the count in
    #                           flight (a batching server whose output changes under load); 0: the same audio

    def factor(self, in_flight: int) -> float:
        return 1.0 + self.slowdown * (max(1, in_flight) - 1)


def parse_profile(text: str) -> StreamProfile:
    """``first=0.2,rtf=0.5,slowdown=0.5,jitter=0,chunk=1,schedule=fixed`` (any subset)."""
    known = {f.name: f.type for f in fields(StreamProfile)}
    values: dict = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        if name not in known:
            raise ValueError(f"unknown stream profile field {name!r}: one of {sorted(known)}")
        values[name] = value if name == "schedule" else float(value)
    profile = StreamProfile(**values)
    if profile.schedule not in ("fixed", "sentence") or min(profile.first, profile.rtf, profile.slowdown,
                                                              profile.jitter, profile.audio) < 0 or profile.chunk <= 0:
        raise ValueError(f"stream profile {text!r}: times must be >= 0, chunk > 0, schedule fixed or sentence")
    return profile


def chunk_frames(frames: int, rate: int, text: str, profile: StreamProfile) -> list[int]:
    """Audio frames of each chunk, in order (they add up to ``frames``)."""
    if profile.schedule == "sentence":
        sentences = [s for s in SENTENCE_END.split(text.strip()) if s] or [text]
        weights = np.cumsum([len(s) for s in sentences]) / sum(len(s) for s in sentences)
        bounds = [0, *(int(round(w * frames)) for w in weights)]
        sizes = [b - a for a, b in zip(bounds, bounds[1:])]
    else:
        step = max(1, int(round(profile.chunk * rate)))
        sizes = [min(step, frames - start) for start in range(0, frames, step)]
    return [s for s in sizes if s > 0] or [frames]


def departures(sizes: list[int], rate: int, profile: StreamProfile, factor: float, seed: int) -> list[float]:
    """Seconds after the request was read at which each chunk leaves."""
    rng = np.random.default_rng(seed)
    made = np.concatenate([[0.0], np.cumsum(sizes[1:]) / rate])
    times = factor * (profile.first + profile.rtf * made) + rng.uniform(0.0, profile.jitter, len(sizes)) \
        if profile.jitter else factor * (profile.first + profile.rtf * made)
    return [float(t) for t in np.maximum.accumulate(times)]


class InFlight:
    """How many scripted requests the server holds right now. A request leaves when its last audio byte is written,
    before the body's terminator: a client that sends its next request as soon as a body ends must not find its
    previous request still counted."""

    def __init__(self):
        self.count, self.lock = 0, threading.Lock()

    def enter(self) -> list:
        """A token for ``leave`` (which counts once however often it is called)."""
        with self.lock:
            self.count += 1
            return [self.count, True]

    def leave(self, token: list) -> None:
        with self.lock:
            if token[1]:
                token[1] = False
                self.count -= 1


def write_paced(handler, pieces: list[bytes], times: list[float], origin: float, done=None) -> None:
    """A chunked body: piece k written (and flushed) at ``origin + times[k]`` (perf_counter seconds). The caller has
    sent the status line and headers with ``Transfer-Encoding: chunked``."""
    for piece, due in zip(pieces, times):
        time.sleep(max(0.0, origin + due - time.perf_counter()))
        if piece:
            handler.wfile.write(f"{len(piece):X}\r\n".encode() + piece + b"\r\n")
            handler.wfile.flush()
    if done is not None:
        done()
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()


@dataclass(frozen=True)
class Layout:
    """Where the audio sits in an answer's body: ``head`` bytes (a WAV header, or 0), then frames of
    ``frame_bytes`` at ``rate`` Hz to the end."""

    head: int
    frame_bytes: int
    rate: int

    @classmethod
    def of_wav_pcm16(cls, wav: bytes, body: bytes) -> Layout:
        """``body``: the 16-bit PCM of ``wav`` (mono), after a header of whatever length."""
        info = sf.info(io.BytesIO(wav))
        return cls(len(body) - 2 * info.frames, 2, info.samplerate)


def scripted_answer(handler, text: str, body: bytes, layout: Layout, content_type: str | None, headers: dict,
                    streamed, header_first: bool = False) -> None:
    """Send ``body`` on the handler's script (``handler.script``: when the request was read and its slowdown) and the
    server's profile: one-shot (``None``: whole, when its last chunk would leave) or streamed: ``"raw"`` (the body's
    bytes) or a framing ``(piece, last) -> bytes`` (each piece wrapped in its protocol's events, the last one with
    the events that end the answer). ``header_first``: the layout's head leaves at once, before chunk 0 (a server
    that writes its WAV header before it synthesizes)."""
    profile, (origin, factor, _, token) = handler.server.stream_profile, handler.script
    done = lambda: handler.server.in_flight.leave(token)  # noqa: E731
    seed = len(handler.server.received)
    frames = (len(body) - layout.head) // layout.frame_bytes
    sizes = chunk_frames(frames, layout.rate, text, profile)
    times = departures(sizes, layout.rate, profile, factor, seed)
    handler.send_response(200)
    if content_type:
        handler.send_header("Content-Type", content_type)
    for key, value in headers.items():
        handler.send_header(key, value)
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    if streamed is None:
        return write_paced(handler, [body], times[-1:], origin, done)
    bounds = [0, *(layout.head + layout.frame_bytes * int(x) for x in np.cumsum(sizes))]
    bounds[-1] = len(body)
    pieces = [body[a:b] for a, b in zip(bounds, bounds[1:])]
    if header_first and layout.head:
        pieces[:1] = [body[:layout.head], pieces[0][layout.head:]]
        times.insert(0, 0.0)
    if callable(streamed):
        pieces = [streamed(piece, i == len(pieces) - 1) for i, piece in enumerate(pieces)]
    write_paced(handler, pieces, times, origin, done)
