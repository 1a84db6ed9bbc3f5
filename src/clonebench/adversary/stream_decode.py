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

WAV_FLOAT, WAV_PCM, WAV_EXTENSIBLE = 3, 1, 0xFFFE
PCM_WIDTH = {"s16le": 2, "f32le": 4}  # bytes per sample of raw_pcm.SAMPLE_FORMATS
MAX_HEADER_BYTES = 1 << 16  # a WAV whose 'data' chunk starts later than this is refused as not audio


class StreamNotAudio(ValueError):
    """The streamed bytes cannot be audio of the expected kind (the request is then a failed one)."""


class PcmStream:
    """Header-less PCM (mono, ``width`` bytes a sample) at ``rate`` Hz; a leading RIFF/WAVE header is read and
    skipped when ``wav_header`` is ``"maybe"`` (Fish: none at 3dd1f85, other builds send one) or ``"always"``."""

    def __init__(self, rate: int, width: int = 2, channels: int = 1, wav_header: str = "never"):
        self.rate, self.width, self.channels = rate, width, channels
        self.wav_header = wav_header
        self.head = b"" if wav_header != "never" else None  # bytes held while the header is being read
        self.audio_bytes = 0

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
            self.audio_bytes += len(chunk)
            return self.samples
        self.head += chunk
        if len(self.head) < 12:
            return 0
        if self.head[:4] != b"RIFF" or self.head[8:12] != b"WAVE":
            if self.wav_header == "always":
                raise StreamNotAudio(f"the stream does not start with a RIFF/WAVE header: {self.head[:12]!r}")
            held, self.head = self.head, None
            self.audio_bytes += len(held)
            return self.samples
        data_at = self._parse_header()
        if data_at is None:
            if len(self.head) > MAX_HEADER_BYTES:
                raise StreamNotAudio(f"no 'data' chunk in the first {MAX_HEADER_BYTES} bytes of the WAV stream")
            return 0
        held, self.head = self.head, None
        self.audio_bytes += len(held) - data_at
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


class SseAudioStream:
    """Server-Sent Events whose ``speech.audio.delta`` events carry base64 audio (vLLM-Omni ``stream=true``):
    the audio inside is read by ``inner``; a ``speech.audio.error`` event fails the stream."""

    def __init__(self, inner: PcmStream):
        self.inner, self.buffer = inner, b""

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
        self.buffer += chunk
        while b"\n\n" in self.buffer:
            event, self.buffer = self.buffer.split(b"\n\n", 1)
            data = b"".join(line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:"))
            if not data:
                continue
            try:
                payload = json.loads(data)
                kind = payload.get("type")
                audio = base64.b64decode(payload.get("audio") or "", validate=True) if kind == "speech.audio.delta" \
                    else b""
            except (ValueError, AttributeError, binascii.Error) as exc:
                raise StreamNotAudio(f"an event that is not a JSON speech event: {data[:80]!r}") from exc
            if kind == "speech.audio.error":
                raise StreamNotAudio(f"the server sent an error event: {data[:200]!r}")
            if audio:
                self.inner.feed(audio)
        return self.inner.samples
