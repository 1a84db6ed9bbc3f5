"""Fish Audio S2 official API server (``python -m tools.api_server``): ``POST /v1/tts``.

Request: ``ServeTTSRequest`` as msgpack (audio as raw ``bin``; the official client's choice) or
JSON (audio as plain base64, no ``data:`` prefix). Readiness: ``GET /v1/health`` answers 200
``{"status": "ok"}`` (static: once it answers, the model is loaded). See
shared notes, server_protocols.md section 1.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import httpx
import numpy as np
import ormsgpack
import soundfile as sf

from clonebench.adversary.base import Adversary, PreparedRequest, SynthesisInput, not_ready
from clonebench.adversary.stream_decode import PcmStream
from clonebench.core.config_reader import ConfigReader
from clonebench.data.audio import InvalidAudio

STREAM_RATE = 44_100


def _strip_wav_header(body: bytes) -> bytes:
    """The PCM of a streamed body that starts with a WAV header (a server other than Fish 3dd1f85 may send one,
    often with placeholder sizes): the header must say 16-bit PCM, mono, at the codec rate."""
    pos, fmt = 12, None
    while pos + 8 <= len(body):
        chunk, size = body[pos:pos + 4], int.from_bytes(body[pos + 4:pos + 8], "little")
        if chunk == b"fmt ":
            fmt = body[pos + 8:pos + 24]
        elif chunk == b"data":
            if fmt is None or len(fmt) < 16:
                raise InvalidAudio("streamed body has a WAV header without a fmt chunk before its data")
            tag, channels, rate = (int.from_bytes(fmt[0:2], "little"), int.from_bytes(fmt[2:4], "little"),
                                   int.from_bytes(fmt[4:8], "little"))
            bits = int.from_bytes(fmt[14:16], "little")
            if (tag, channels, rate, bits) != (1, 1, STREAM_RATE, 16):
                raise InvalidAudio(f"streamed WAV header says format {tag}, {channels} channel(s), {rate} Hz, {bits} "
                                   f"bit; expected 16-bit PCM mono at {STREAM_RATE} Hz")
            return body[pos + 8:]
        pos += 8 + size + (size % 2)
    raise InvalidAudio("streamed body starts with a WAV header but has no data chunk")


def pcm16_to_wav(body: bytes) -> bytes:
    """Fish's streamed body (raw s16le mono at the codec rate) as a WAV file.

    Fish 3dd1f85 sends no header (the engine's header is a numpy array that the view drops); a body that does
    start with one (``RIFF....WAVE``) is accepted when the header matches, never read as samples."""
    if body[:4] == b"RIFF" and body[8:12] == b"WAVE":
        body = _strip_wav_header(body)
    if len(body) % 2:
        raise InvalidAudio(f"streamed body of {len(body)} bytes is not whole 16-bit samples")
    out = io.BytesIO()
    sf.write(out, np.frombuffer(body, dtype="<i2"), STREAM_RATE, subtype="PCM_16", format="WAV")
    return out.getvalue()


def health_url(endpoint_url: str) -> str:
    """``<endpoint>/../health``: for ``http://host:port/v1/tts`` this is ``http://host:port/v1/health``."""
    return str(httpx.URL(endpoint_url).join("health"))


class FishS2HTTP(Adversary):
    protocol = "fish_s2_http"

    supports_timing = True

    @classmethod
    def read_params(cls, reader: ConfigReader) -> dict[str, Any]:
        return {
            "body_format": reader.str("adversary.body_format", choices=("msgpack", "json")),
            "max_new_tokens": reader.int("adversary.max_new_tokens", minimum=0),
            "chunk_length": reader.int("adversary.chunk_length", minimum=0),
            "top_p": reader.float("adversary.top_p", minimum=0.1, maximum=1.0),
            "repetition_penalty": reader.float("adversary.repetition_penalty", minimum=0.9, maximum=2.0),
            "temperature": reader.float("adversary.temperature", minimum=0.1, maximum=1.0),
            "normalize": reader.bool("adversary.normalize"),
            "use_memory_cache": reader.str("adversary.use_memory_cache", choices=("on", "off")),
        }

    # fish-speech 3dd1f85: ServeTTSRequest declares `normalize` but nothing reads it; `repetition_penalty` is
    # passed to generate_long, which never uses it (S2 samples with a fixed repetition-aware sampler)
    ignored_fields = frozenset({"normalize", "repetition_penalty"})

    def request_fingerprint_fields(self) -> dict[str, Any]:
        fields = super().request_fingerprint_fields()
        fields.pop("body_format")  # msgpack and JSON carry the same request
        return fields

    def effective_sampling(self) -> dict[str, Any]:
        p = self.params
        return {"temperature": p["temperature"], "top_p": p["top_p"], "top_k": 30,  # top_k is fixed by the server
                "repetition_penalty": None, "max_new_tokens": p["max_new_tokens"]}

    async def check_ready(self, http: httpx.AsyncClient, endpoint_url: str) -> dict[str, Any]:
        url = health_url(endpoint_url)
        try:
            response = await http.get(url)
        except httpx.HTTPError as exc:
            raise not_ready(
                f"Fish server not ready: GET {url} failed: {exc!r}. Start the server (scripts/serve_fish_s2.py) "
                "or fix adversary.endpoint_url", may_recover=True) from exc
        body = response.text[:300]
        try:
            ok = response.status_code == 200 and response.json() == {"status": "ok"}
        except ValueError:
            ok = False
        if not ok:
            hint = " (set adversary.api_key_env to the variable holding the key)" if response.status_code == 401 else ""
            raise not_ready(
                f"Fish server not ready: GET {url} answered HTTP {response.status_code} {body!r}; "
                f"expected 200 {{\"status\":\"ok\"}}{hint}", may_recover=response.status_code >= 500)
        return {"url": url, "status_code": response.status_code, "body": response.json()}

    def prepare(self, item: SynthesisInput) -> PreparedRequest:
        p = self.params
        body = {
            "text": item.text,
            "references": [{"audio": item.reference_audio, "text": item.reference_text}],
            "reference_id": None,
            "format": "wav",
            "streaming": self.client.streams,
            "seed": item.seed,
            "max_new_tokens": p["max_new_tokens"],
            "chunk_length": p["chunk_length"],
            "top_p": p["top_p"],
            "repetition_penalty": p["repetition_penalty"],
            "temperature": p["temperature"],
            "normalize": p["normalize"],
            "use_memory_cache": p["use_memory_cache"],
        }
        if p["body_format"] == "msgpack":
            content, content_type = ormsgpack.packb(body), "application/msgpack"
        else:
            body["references"] = [{"audio": base64.b64encode(item.reference_audio).decode("ascii"),
                                   "text": item.reference_text}]
            content, content_type = json.dumps(body, ensure_ascii=False).encode("utf-8"), "application/json"
        if self.client.streams:  # streamed: headerless s16le mono 44.1 kHz, wrapped into a WAV here
            return PreparedRequest("POST", self.client.endpoint_url, content, {"Content-Type": content_type},
                                   stream=True, to_wav=pcm16_to_wav,
                                   decoder=lambda: PcmStream(STREAM_RATE, wav_header="maybe"))
        return PreparedRequest("POST", self.client.endpoint_url, content, {"Content-Type": content_type})
