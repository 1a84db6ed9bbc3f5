"""OpenAI-compatible speech (vLLM-Omni ``vllm serve fishaudio/s2-pro --omni``): JSON ``POST /v1/audio/speech``.

Body: ``input``, ``voice`` ("default" for Fish), ``ref_audio`` as a ``data:audio/wav;base64,...`` URI (raw
base64 is rejected), ``ref_text`` (required with ref_audio), ``response_format`` "wav", ``seed``,
``max_new_tokens`` (1-4096), optional ``model``. Errors: ``{"error": {"message", "type", "param", "code"}}``.
Readiness: ``GET /health``, else ``GET /v1/models`` (shared notes, server_protocols.md section 3).

Sampling is not a request field of vLLM-Omni's speech model: unknown top-level fields are dropped, and the
stage defaults apply (temperature 0.8, top_k 30, top_p 0.9, repetition_penalty 1.0). The run's sampling is
sent in ``extra_params``, which serving_speech merges into the first stage's SamplingParams.extra_args
(vllm-omni 01bc417); whether the Fish stage reads them depends on the version (fish_speech_slow_ar 0febbd5
samples with the stage YAML's SamplingParams and a fixed fast-AR sampler), so the README says to set the stage
YAML to the same values. What is sent is what the manifest records and compare-check compares. The newest servers refuse references shorter than 1 s or longer than 30 s
(``_REF_AUDIO_MIN_DURATION`` / ``_REF_AUDIO_MAX_DURATION``): checked here before any request.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx

from clonebench.adversary.base import Adversary, PreparedRequest, ReferenceRule, SynthesisInput, not_ready
from clonebench.config_reader import ConfigReader

SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "repetition_penalty")
REFERENCE_RULE = ReferenceRule(1.0, 30.0, "vLLM-Omni serving_speech _REF_AUDIO_MIN/MAX_DURATION (01bc417)")


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
            "temperature": reader.float("adversary.temperature", minimum=0.0),
            "top_p": reader.float("adversary.top_p", minimum=0.0, maximum=1.0),
            "top_k": reader.int("adversary.top_k", minimum=-1),
            "repetition_penalty": reader.float("adversary.repetition_penalty", minimum=0.0),
            "reference_duration_check": reader.bool("adversary.reference_duration_check"),
        }

    def request_fingerprint_fields(self) -> dict[str, Any]:
        fields = super().request_fingerprint_fields()
        fields.pop("reference_duration_check")  # a client-side check; the request is the same
        return fields

    def effective_sampling(self) -> dict[str, Any]:
        return {**{k: self.params[k] for k in SAMPLING_FIELDS}, "max_new_tokens": self.params["max_new_tokens"]}

    def reference_rule(self) -> ReferenceRule | None:
        return REFERENCE_RULE if self.params["reference_duration_check"] else None

    async def check_ready(self, http: httpx.AsyncClient, endpoint_url: str) -> dict[str, Any]:
        root = server_root(endpoint_url)
        seen, recover = [], True
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
            if 400 <= response.status_code < 500 and response.status_code != 404:
                recover = False
        raise not_ready("OpenAI-compatible speech server not ready: " + "; ".join(seen)
                        + ". Start the server or fix adversary.endpoint_url", may_recover=recover)

    def prepare(self, item: SynthesisInput) -> PreparedRequest:
        body: dict[str, Any] = {
            "input": item.text,
            "voice": self.params["voice"],
            "ref_audio": f"data:{item.reference_mime};base64," + base64.b64encode(item.reference_audio).decode("ascii"),
            "ref_text": item.reference_text,
            "response_format": "wav",
            "max_new_tokens": self.params["max_new_tokens"],
            "seed": item.seed,
            "extra_params": {k: self.params[k] for k in SAMPLING_FIELDS},  # the stage's sampling overrides
        }
        if self.params["model"]:
            body["model"] = self.params["model"]
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        return PreparedRequest("POST", self.client.endpoint_url, content, {"Content-Type": "application/json"})
