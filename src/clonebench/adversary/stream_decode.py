"""Incremental reading of a streamed audio answer: how many audio samples can be decoded from the bytes so far.

A serving run (``adversary.measure=stream``) times the first *decodable audio sample*, not the first body byte:
a WAV header, an SSE ``data:`` prefix or half a sample is not audio a player could play. Each protocol's
``prepare`` names the decoder of its streamed answer (``PreparedRequest.decoder``); the client feeds it every
chunk as it arrives and notes when the decodable sample count first rises above zero.

Written here rather than with soundfile/wave: those read whole files, and a streamed WAV carries placeholder
sizes (0, 0xFFFFFFFF or 0x7FFFFFF0) that they refuse or trust; what is needed is only a running sample count.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct

from clonebench.adversary.raw_pcm import pcm_to_wav
from clonebench.data.audio import InvalidAudio

WAV_FLOAT, WAV_PCM, WAV_EXTENSIBLE = 3, 1, 0xFFFE
PCM_WIDTH = {"s16le": 2, "f32le": 4}  # bytes per sample of raw_pcm.SAMPLE_FORMATS
PLACEHOLDER_SIZES = (0, 0x7FFFFFF0, 0xFFFFFFFF)  # a streamed WAV's data size, written before the audio was made
MAX_HEADER_BYTES = 1 << 16  # a WAV whose 'data' chunk starts later than this is refused as not audio


class StreamNotAudio(ValueError):
    """The streamed bytes cannot be audio of the expected kind (the request is then a failed one)."""


class PcmStream:
    """Header-less PCM (mono, ``width`` bytes a sample) at ``rate`` Hz; a leading RIFF/WAVE header is read and
    skipped when ``wav_header`` is ``"maybe"`` (Fish: none at 3dd1f85, other builds send one) or ``"always"``."""

    def __init__(self, rate: int, width: int = 2, channels: int = 1, wav_header: str = "never",
                 collect: bool = False):
        self.rate, self.width, self.channels = rate, width, channels
        self.wav_header = wav_header
        self.head = b"" if wav_header != "never" else None  # bytes held while the header is being read
        self.audio_bytes = 0
        self.audio = bytearray() if collect else None  # collect=True: the audio bytes themselves (whole answers)

    def _add(self, audio: bytes) -> None:
        self.audio_bytes += len(audio)
        if self.audio is not None:
            self.audio += audio

    @property
    def samples(self) -> int:
        """Decodable sample frames so far."""
        return self.audio_bytes // (self.width * self.channels)

    @property
    def seconds(self) -> float:
        return self.samples / self.rate

    def feed(self, chunk: bytes) -> int:
        """Add the next chunk; the decodable sample frames so far."""
        if self.head is None:
            self._add(chunk)
            return self.samples
        self.head += chunk
        if len(self.head) < 12:
            return 0
        if self.head[:4] != b"RIFF" or self.head[8:12] != b"WAVE":
            if self.wav_header == "always":
                raise StreamNotAudio(f"the stream does not start with a RIFF/WAVE header: {self.head[:12]!r}")
            held, self.head = self.head, None
            self._add(held)
            return self.samples
        data_at = self._parse_header()
        if data_at is None:
            if len(self.head) > MAX_HEADER_BYTES:
                raise StreamNotAudio(f"no 'data' chunk in the first {MAX_HEADER_BYTES} bytes of the WAV stream")
            return 0
        held, self.head = self.head, None
        self._add(held[data_at:])
        return self.samples

    def _parse_header(self) -> int | None:
        """Offset of the first audio byte once the header up to the 'data' chunk is in; rate and width from 'fmt '."""
        at = 12
        while at + 8 <= len(self.head):
            ident, size = self.head[at:at + 4], struct.unpack("<I", self.head[at + 4:at + 8])[0]
            if ident == b"data":
                return at + 8
            if at + 8 + size > len(self.head):
                return None
            if ident == b"fmt ":
                if size < 16:
                    raise StreamNotAudio(f"a 'fmt ' chunk of {size} bytes")
                tag, channels, rate, _, _, bits = struct.unpack("<HHIIHH", self.head[at + 8:at + 24])
                if tag not in (WAV_PCM, WAV_FLOAT, WAV_EXTENSIBLE) or not channels or not rate or bits % 8:
                    raise StreamNotAudio(f"a WAV stream with format tag {tag}, {channels} channel(s), {rate} Hz, "
                                         f"{bits} bits: not PCM")
                self.rate, self.channels, self.width = rate, channels, bits // 8
            at += 8 + size + (size & 1)
        return None


def finalize_streamed_wav(body: bytes) -> bytes:
    """A WAV streamed with a placeholder data size (``PLACEHOLDER_SIZES``: GPT-SoVITS api_v2 writes 0, s2.cpp
    0x7FFFFFF0, others 0xFFFFFFFF) followed by its PCM: the RIFF and data sizes rewritten to what was received. Any
    other body is returned as is (the shared WAV validation reads it)."""
    if len(body) < 12 or body[:4] != b"RIFF" or body[8:12] != b"WAVE":
        return body
    pos = 12
    while pos + 8 <= len(body):
        chunk, size = body[pos:pos + 4], int.from_bytes(body[pos + 4:pos + 8], "little")
        if chunk == b"data":
            rest = len(body) - pos - 8
            if size not in PLACEHOLDER_SIZES or size == rest or rest == 0:
                return body
            if rest % 2:
                raise InvalidAudio(f"streamed WAV body ends mid-sample ({rest} bytes of 16-bit PCM): cut short")
            out = bytearray(body)
            out[pos + 4:pos + 8] = rest.to_bytes(4, "little")
            out[4:8] = (len(body) - 8).to_bytes(4, "little")
            return bytes(out)
        pos += 8 + size + (size & 1)
    return body


class SseEvents:
    """Server-Sent Events as they arrive: each complete event's ``data:`` lines joined (CRLF or LF line ends)."""

    def __init__(self):
        self.buffer = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        self.buffer = (self.buffer + chunk).replace(b"\r\n", b"\n")
        out = []
        while b"\n\n" in self.buffer:
            event, self.buffer = self.buffer.split(b"\n\n", 1)
            data = b"\n".join(line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:"))
            if data:
                out.append(data)
        return out


def _json_event(data: bytes) -> dict:
    try:
        payload = json.loads(data)
    except ValueError as exc:
        raise StreamNotAudio(f"an event that is not JSON: {data[:80]!r}") from exc
    if not isinstance(payload, dict):
        raise StreamNotAudio(f"an event that is not a JSON object: {data[:80]!r}")
    return payload


def _b64(text, data: bytes) -> bytes:
    try:
        return base64.b64decode(text or "", validate=True)
    except (binascii.Error, TypeError, ValueError) as exc:
        raise StreamNotAudio(f"an audio event whose audio is not base64: {data[:80]!r}") from exc


class SseAudioStream:
    """vLLM-Omni's Server-Sent Events (``stream_format="sse"``, or ``stream=true`` without ``stream_format`` since
    #4679), OpenAI's speech stream shape. As upstream writes it (``docs/serving/speech_api.md`` at 078de2d1,
    ``tests/entrypoints/openai/test_serving_speech.py`` at 5eba539f): each event an ``event: <type>`` line and one JSON
    ``data:`` line; ``speech.audio.delta`` carries a base64 chunk of the requested format in ``audio`` and that
    format in ``response_format`` (only ``pcm`` is read here: the request asks for it, and a ``wav`` stream's first
    chunk would hold a header; no event names the rate: pcm is at the model's, 44.1 kHz for Fish S2);
    ``speech.audio.done`` (with ``usage``) is the last event (``done``); a failure
    after the 200 sends ``speech.audio.error`` (``error``: message, type, param, code) instead of it, which fails
    the stream. Upstream's docs and tests show no ``data: [DONE]``: one is ignored and ends nothing. ``delta`` is
    read when ``audio`` is absent: #4490's merged description (2026-06-16) names ``delta`` as the field of its
    first version. Other event types are ignored (OpenAI may add some)."""

    def __init__(self, inner: PcmStream):
        self.inner, self.events, self.done = inner, SseEvents(), False

    @property
    def samples(self) -> int:
        return self.inner.samples

    @property
    def seconds(self) -> float:
        return self.inner.seconds

    @property
    def rate(self) -> int:
        return self.inner.rate

    def feed(self, chunk: bytes) -> int:
        for data in self.events.feed(chunk):
            if data == b"[DONE]":
                self.sentinel(data)
            else:
                self.event(_json_event(data), data)
        return self.inner.samples

    def sentinel(self, data: bytes) -> None:
        """``data: [DONE]``: not vLLM-Omni's end of stream (``speech.audio.done`` is), and carries no audio."""

    def event(self, payload: dict, data: bytes) -> None:
        kind = payload.get("type")
        if kind == "speech.audio.error":
            error = payload.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            raise StreamNotAudio(f"the server failed after its 200 (speech.audio.error: {message!r}): "
                                 f"{data[:200]!r}")
        if kind == "speech.audio.done":
            self.done = True
        elif kind == "speech.audio.delta":
            if payload.get("response_format", "pcm") != "pcm":
                raise StreamNotAudio(f"an audio delta that is not pcm (the request asked for pcm): {data[:120]!r}")
            audio = _b64(payload["audio"] if "audio" in payload else payload.get("delta"), data)
            if audio:
                self.inner.feed(audio)


class SglangSseStream(SseAudioStream):
    """SGLang-Omni's speech events (``stream: true``; ``serve/openai_api.py`` ``_speech_stream`` at 2489a10):
    ``audio.speech.chunk`` objects whose ``audio`` is ``{data: base64, format, mime_type, sample_rate}`` (each chunk
    encoded alone in the request's ``response_format``: only ``pcm`` concatenates, so only pcm is read), a last one
    with ``audio: null`` and a ``finish_reason``, then ``data: [DONE]``. A failure after the first event cannot change
    the 200: the body just ends, without its final event (``done`` stays false)."""

    def sentinel(self, data: bytes) -> None:
        self.done = True  # SGLang-Omni's end of stream

    def event(self, payload: dict, data: bytes) -> None:
        if payload.get("object") != "audio.speech.chunk":
            raise StreamNotAudio(f"an event that is not an audio.speech.chunk: {data[:120]!r}")
        audio = payload.get("audio")
        if payload.get("finish_reason") is not None and not audio:
            return
        if not isinstance(audio, dict) or audio.get("format") != "pcm":
            raise StreamNotAudio(f"an audio chunk that is not pcm (each chunk of another format is a whole "
                                 f"file of its own): {data[:120]!r}")
        rate = audio.get("sample_rate")
        if isinstance(rate, int) and rate > 0 and rate != self.inner.rate:
            if self.inner.audio_bytes:
                raise StreamNotAudio(f"the sample rate changed inside the stream ({self.inner.rate} -> {rate})")
            self.inner.rate = rate
        pcm = _b64(audio.get("data"), data)
        if pcm:
            self.inner.feed(pcm)


def events_to_wav(decoder: SseAudioStream, body: bytes, server: str) -> bytes:
    """A whole event-stream answer as a WAV (s16le inside): refused when it ended without its final event."""
    if decoder.inner.audio is None:
        raise ValueError("events_to_wav needs a decoder whose inner PcmStream collects (collect=True)")
    decoder.feed(body)
    if not decoder.done:
        raise InvalidAudio(f"{server}'s event stream ended without its final event after {decoder.seconds:.2f} s "
                           "of audio: cut short (a server failing after its 200 just ends the body)")
    return pcm_to_wav(bytes(decoder.inner.audio), sample_rate=decoder.rate, sample_format="s16le", server=server)
