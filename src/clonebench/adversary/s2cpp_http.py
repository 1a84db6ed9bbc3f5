"""s2.cpp (GGML port of Fish S2, ``s2 --server``): multipart ``POST /generate``.

Parts: ``text`` (a plain field), ``reference`` (a file part with a filename), ``reference_text``, ``params``
(JSON: max_new_tokens, temperature, top_p, top_k). It has no seed (mt19937 from random_device) and no
health route: readiness is a TCP connect plus a ``POST /generate`` without text, which answers 400 and does
not take the busy lock. 503 means another synthesis is running (transient). The default answer is a 32-bit
float WAV. s2.cpp silently ignores reference audio it cannot decode, so the reference-sensitivity gate is
mandatory for it (shared notes, server_protocols.md section 2).

Timing and serving runs (``adversary.measure`` ttfb or stream) add ``stream`` and ``chunked`` to ``params``
(rodrigomatta/s2.cpp 2c33261, ``src/s2_server.cpp``: ``set_chunked_content_provider`` with ``HttpStreamSink``): a
16-bit PCM WAV header with the placeholder size 0x7FFFFFF0, sent before the synthesis starts, then PCM16 chunks as
they are decoded (``output_format`` stays wav: with pcm and ``chunked`` the server holds the first 3 s of audio,
``stream_start_buffer_ms``). The sizes are rewritten to what was received (``finalize_streamed_wav``). A failure
after the header cuts the chunked body (the content provider returns false).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx

from clonebench.adversary.base import Adversary, PreparedRequest, SynthesisInput, not_ready
from clonebench.adversary.stream_decode import PcmStream, finalize_streamed_wav
from clonebench.core.config_reader import ConfigReader
from clonebench.core.errors import ConfigError

STREAM_RATE = 44_100  # the codec's rate (the streamed header says it too; the decoder reads it there)


def multipart(fields: list[tuple[str, str | bytes, str | None, str | None]]) -> tuple[bytes, str]:
    """A multipart/form-data body with a fixed boundary derived from nothing random at send time.

    ``fields``: (name, value, filename, content type). Written by hand (not httpx's encoder) so that the
    request is serialised once and every retry resends the identical bytes, boundary included.
    """
    boundary = uuid.uuid4().hex
    out = bytearray()
    for name, value, filename, content_type in fields:
        out += f"--{boundary}\r\n".encode()
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out += f"Content-Disposition: {disposition}\r\n".encode()
        if content_type:
            out += f"Content-Type: {content_type}\r\n".encode()
        out += b"\r\n" + (value if isinstance(value, bytes) else value.encode("utf-8")) + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return bytes(out), f"multipart/form-data; boundary={boundary}"


class S2CppHTTP(Adversary):
    protocol = "s2cpp_http"
    supports_timing = True  # params stream + chunked: a WAV header, then PCM16 as it is decoded
    busy_status = 503  # "Server busy processing another synthesis request." (one at a time, no queue)
    accepts_seed = False  # mt19937 from random_device: no seed field

    @classmethod
    def read_params(cls, reader: ConfigReader) -> dict[str, Any]:
        if not reader.bool("adversary.reference_check"):
            raise ConfigError(f"{reader.source}: adversary.reference_check=false is refused for s2cpp_http: s2.cpp "
                              "answers 200 with an uncloned voice when it cannot decode the reference")
        return {
            "max_new_tokens": reader.int("adversary.max_new_tokens", minimum=1),
            "temperature": reader.float("adversary.temperature", minimum=0.0),
            "top_p": reader.float("adversary.top_p", minimum=0.0, maximum=1.0),
            "top_k": reader.int("adversary.top_k", minimum=0),
        }

    def seed_policy(self, seed: int | None) -> str:
        return "not_supported"

    def request_fingerprint_fields(self) -> dict[str, Any]:
        return {**super().request_fingerprint_fields(), "seed_supported": False}

    def effective_sampling(self) -> dict[str, Any]:
        # params override the server's flags per request; s2.cpp has no repetition penalty. Flags that shape every
        # output (--normalize, --trim-silence, --min-tokens-before-end ...) are in the service record.
        p = self.params
        return {"temperature": p["temperature"], "top_p": p["top_p"], "top_k": p["top_k"],
                "repetition_penalty": None, "max_new_tokens": p["max_new_tokens"]}

    async def check_ready(self, http: httpx.AsyncClient, endpoint_url: str) -> dict[str, Any]:
        url = endpoint_url
        content, content_type = multipart([("params", "{}", None, None)])
        try:
            response = await http.post(url, content=content, headers={"Content-Type": content_type})
        except httpx.HTTPError as exc:
            raise not_ready(f"s2.cpp server not ready: POST {url} (readiness probe without text) failed: {exc!r}. "
                            "Start `s2 --server` (scripts/serve_s2cpp.py) or fix adversary.endpoint_url",
                            may_recover=True) from exc
        if response.status_code != 400:
            raise not_ready(f"s2.cpp server not ready: POST {url} without text answered HTTP "
                            f"{response.status_code} {response.text[:200]!r}; expected 400 (missing text)",
                            may_recover=response.status_code >= 500)
        return {"url": url, "probe": "POST /generate without text", "status_code": 400}

    def prepare(self, item: SynthesisInput) -> PreparedRequest:
        params = {k: self.params[k] for k in ("max_new_tokens", "temperature", "top_p", "top_k")}
        if self.client.streams:
            params.update(stream=True, chunked=True)
        params = json.dumps(params, sort_keys=True)
        content, content_type = multipart([
            ("text", item.text, None, None),
            ("reference", item.reference_audio, f"reference.{item.reference_container.lower()}", item.reference_mime),
            ("reference_text", item.reference_text, None, None),
            ("params", params, None, None),
        ])
        if self.client.streams:
            return PreparedRequest("POST", self.client.endpoint_url, content, {"Content-Type": content_type},
                                   stream=True, to_wav=finalize_streamed_wav,
                                   decoder=lambda: PcmStream(STREAM_RATE, wav_header="always"))
        return PreparedRequest("POST", self.client.endpoint_url, content, {"Content-Type": content_type})
