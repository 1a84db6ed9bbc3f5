"""OpenAI-compatible speech (vLLM-Omni ``vllm serve fishaudio/s2-pro --omni``): JSON ``POST /v1/audio/speech``.

Body: ``input``, ``voice`` ("default" for Fish), ``ref_audio`` as a ``data:audio/wav;base64,...`` URI (raw
base64 is rejected), ``ref_text`` (required with ref_audio), ``response_format`` "wav", ``seed``,
``max_new_tokens`` (1-4096), optional ``model``. Errors: ``{"error": {"message", "type", "param", "code"}}``.
Readiness: ``GET /health``, else ``GET /v1/models`` (shared notes, server_protocols.md section 3).

Sampling is not a request field of vLLM-Omni's speech model: unknown top-level fields are dropped, and the
deploy config's stage-0 values apply (``vllm_omni/deploy/fish_qwen3_omni.yaml``: temperature 0.8, top_k 30, top_p
0.9, repetition_penalty 1.0). The run's sampling is sent in ``extra_params``. What the server does with it depends
on its build (shared notes, "vLLM-Omni after 2026-06", read 2026-12-01): since #5406 (76e4a78a, 2026-07-25)
temperature, top_p and top_k are copied into stage 0's SamplingParams, so the Fish slow AR applies them; before
it they only reach ``extra_args``, which the slow AR never reads; repetition_penalty never reaches it. The build
comes from the service record (``scripts/serve_vllm_omni.py --record``); ``effective_sampling`` follows it and
says "unknown" without one. The request never holds ``sample_rate`` (no such field at 01bc417 / 20893221; since
#6553 Fish refuses it with 400). Timing and serving runs stream: ``stream=true`` with ``stream_format="audio"``
(else Server-Sent Events, #4490, #4679) and ``response_format="pcm"``: raw s16le at 44.1 kHz as it is made; with
``adversary.stream_format=sse`` they ask for the events instead with ``stream_format="sse"`` alone (the events
every build since #4490 sends for it, and a client of the default ``stream=true`` sees since #4679:
``speech.audio.delta`` with base64 s16le in ``audio``, then ``speech.audio.done``, or ``speech.audio.error`` on a
failure after the 200: ``stream_decode.SseAudioStream``). Seeds fit int64 (#6598): every
seed is at most SEED_MAX (2**31 - 1), checked with the manifest before any request. The newest servers refuse
references shorter than 1 s or longer than 30 s (``_REF_AUDIO_MIN_DURATION`` / ``_REF_AUDIO_MAX_DURATION``):
checked here before any request.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx

from clonebench.adversary.base import Adversary, PreparedRequest, ReferenceRule, SynthesisInput, not_ready
from clonebench.adversary.raw_pcm import pcm_to_wav
from clonebench.adversary.stream_decode import PcmStream, SseAudioStream, events_to_wav
from clonebench.core.config_reader import ConfigReader
from clonebench.core.errors import ConfigError

SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "repetition_penalty")
APPLIED_SINCE_5406 = ("temperature", "top_p", "top_k")  # copied into stage 0's SamplingParams since #5406
DEPLOY_CONFIG = "the server's deploy config (stage 0), not settable per request"
STREAM_RATE = 44_100  # Fish S2's codec rate: a streamed answer carries no header to say it
STREAM_FORMATS = ("audio", "sse")  # timing and serving runs: raw PCM, or Server-Sent Events
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
    supports_timing = True  # stream=true, stream_format="audio"

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
            "stream_format": reader.str("adversary.stream_format", choices=STREAM_FORMATS),
        }

    def request_fingerprint_fields(self) -> dict[str, Any]:
        fields = super().request_fingerprint_fields()
        fields.pop("reference_duration_check")  # a client-side check; the request is the same
        if not self.client.streams or fields["stream_format"] == "audio":
            fields.pop("stream_format")  # a quality run's request has none; raw audio: the request before the key
        return fields

    def server_build(self) -> tuple[bool | None, str]:
        """(does extra_params sampling reach the Fish slow AR, the build's label) from the service record."""
        build = (self.service_record or {}).get("build")
        if build is None:
            return None, "unknown (no service record from scripts/serve_vllm_omni.py)"
        applies = build.get("extra_params_sampling") if isinstance(build, dict) else "?"
        if applies not in (True, False, None):
            raise ConfigError(f"adversary.service_record: its 'build' is not what scripts/serve_vllm_omni.py writes "
                              f"({build!r}); restart the server through the launcher")
        return applies, str(build.get("label") or "unknown")

    def effective_sampling(self) -> dict[str, Any]:
        """What the server's build applies: the sent values that reach the slow AR, else its deploy config's."""
        applies, label = self.server_build()
        out: dict[str, Any] = {}
        for name in SAMPLING_FIELDS:
            if name not in APPLIED_SINCE_5406 or applies is False:
                out[name] = DEPLOY_CONFIG
            elif applies:
                out[name] = self.params[name]
            else:
                out[name] = f"{self.params[name]!r} sent; applied only since #5406 (server build unknown)"
        return {**out, "max_new_tokens": self.params["max_new_tokens"], "server_build": label}

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
        url, headers = self.client.endpoint_url, {"Content-Type": "application/json"}
        if not self.client.streams:
            return PreparedRequest("POST", url, json.dumps(body, ensure_ascii=False).encode("utf-8"), headers)
        # raw s16le at the model's 44.1 kHz as it is made (#4679), or events carrying base64 s16le (#4490): events
        # are asked for by stream_format alone, as OpenAI does, since stream=true with "sse" still streamed raw audio
        # between #4490 and #4679 (protocol/audio.py is_sse_stream); raw audio also sends stream=true, which builds
        # before #4490 need
        events = self.params["stream_format"] == "sse"
        body.update({} if events else {"stream": True}, stream_format=self.params["stream_format"],
                    response_format="pcm")
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        if events:
            return PreparedRequest("POST", url, content, headers, stream=True, to_wav=_events_to_wav,
                                   decoder=lambda: SseAudioStream(PcmStream(STREAM_RATE)))
        return PreparedRequest("POST", url, content, headers, stream=True, to_wav=_stream_to_wav,
                               decoder=lambda: PcmStream(STREAM_RATE))


def _stream_to_wav(body: bytes) -> bytes:
    return pcm_to_wav(body, sample_rate=STREAM_RATE, sample_format="s16le", server="vLLM-Omni")


def _events_to_wav(body: bytes) -> bytes:
    return events_to_wav(SseAudioStream(PcmStream(STREAM_RATE, collect=True)), body, "vLLM-Omni")
