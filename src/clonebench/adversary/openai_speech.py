"""OpenAI-compatible speech (vLLM-Omni ``vllm serve fishaudio/s2-pro --omni``): JSON ``POST /v1/audio/speech``.

Body: ``input``, ``voice`` ("default" for Fish), ``ref_audio`` as a ``data:audio/wav;base64,...`` URI (raw
base64 is rejected), ``ref_text`` (required with ref_audio), ``response_format`` "wav", ``seed``,
``max_new_tokens`` (1-4096), optional ``model``. Errors: ``{"error": {"message", "type", "param", "code"}}``.
Readiness: ``GET /health``, else ``GET /v1/models`` (shared notes, server_protocols.md section 3).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx

from clonebench.adversary.base import Adversary, PreparedRequest, SynthesisInput
from clonebench.config_reader import ConfigReader
from clonebench.errors import ServerNotReadyError


def server_root(endpoint_url: str) -> httpx.URL:
    """``http://h:p/v1/audio/speech`` -> ``http://h:p/``."""
    url = httpx.URL(endpoint_url)
    path = url.path
    for suffix in ("/v1/audio/speech", "/audio/speech"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            break
    return url.copy_with(path=(path.rstrip("/") or "") + "/")


class OpenAISpeech(Adversary):
    protocol = "openai_speech"

    @classmethod
    def read_params(cls, reader: ConfigReader) -> dict[str, Any]:
        return {
            "model": reader.str("adversary.model", None, allow_none=True),
            "voice": reader.str("adversary.voice"),
            "max_new_tokens": reader.int("adversary.max_new_tokens", minimum=1, maximum=4096),
        }

    async def check_ready(self, http: httpx.AsyncClient, endpoint_url: str) -> dict[str, Any]:
        root = server_root(endpoint_url)
        seen = []
        for path in ("health", "v1/models"):
            url = str(root.join(path))
            try:
                response = await http.get(url)
            except httpx.HTTPError as exc:
                seen.append(f"GET {url}: {exc!r}")
                continue
            if response.status_code == 200:
                return {"url": url, "status_code": 200}
            seen.append(f"GET {url}: HTTP {response.status_code} {response.text[:200]!r}")
        raise ServerNotReadyError("OpenAI-compatible speech server not ready: " + "; ".join(seen)
                                  + ". Start the server or fix adversary.endpoint_url")

    def prepare(self, item: SynthesisInput) -> PreparedRequest:
        body: dict[str, Any] = {
            "input": item.text,
            "voice": self.params["voice"],
            "ref_audio": "data:audio/wav;base64," + base64.b64encode(item.reference_audio).decode("ascii"),
            "ref_text": item.reference_text,
            "response_format": "wav",
            "max_new_tokens": self.params["max_new_tokens"],
            "seed": item.seed,
        }
        if self.params["model"]:
            body["model"] = self.params["model"]
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        return PreparedRequest("POST", self.client.endpoint_url, content, {"Content-Type": "application/json"})
