"""SGLang-Omni's OpenAI-style speech route (read at sgl-project/sglang-omni
2489a10eecb91bbd1bdbe8b511b0bdf23d341f3f, 2026-04-05: ``sglang_omni/serve/openai_api.py``, ``serve/protocol.py``,
``client/audio.py``, ``models/fishaudio_s2_pro/pipeline/stages.py``; Qwen3-TTS read on the branch
``adarshxs/qwen3_tts`` at 608b1cd33fd352a980e869acc4594c8dd79c0f0e): JSON ``POST /v1/audio/speech``.

Body (``CreateSpeechRequest``): ``input``, ``model``, ``response_format`` (wav, pcm, flac, mp3, opus, aac; an unknown
one falls back to WAV), ``speed``, ``stream``, the reference as ``references: [{audio_path, text}]`` (S2-Pro) or
``ref_audio`` / ``ref_text`` (appended to ``references`` by the route, and the form the Qwen3-TTS pipeline reads
from its TTS params, with ``task_type: base``), sampling (``temperature``, ``top_p``, ``top_k``,
``repetition_penalty``, ``max_new_tokens``; unset ones take the route's S2-Pro defaults 0.8 / 0.8 / 30 / 1.1) and ``seed``. The reference is a **path on the
server's disk** (or an http(s) URL the server fetches; no inline audio): staged here through
``adversary.reference_share`` (``staging.py``), as for GPT-SoVITS.

Seed: the route puts ``seed`` into the request's TTS params only (its ``SamplingParams.seed`` stays unset), and
neither the S2-Pro pipeline nor Qwen3-TTS's reads it there: the seed is sent and recorded as ignored
(``seeded: false``) per ``adversary.pipeline`` (``SEED_READ``; a pipeline that reads it would say so there).

Answers: ``response_format`` wav is a whole WAV (``encode_wav``: int16, mono) at the pipeline's codec rate (44.1 kHz
for S2-Pro, 24 kHz for Qwen3-TTS), validated by the shared WAV check; ``pcm`` is header-less s16le at that rate,
wrapped here (``raw_pcm.pcm_to_wav`` at ``adversary.sample_rate``). ``stream: true`` answers SSE events
(``_speech_stream``): ``audio.speech.chunk`` objects with ``audio: {data: base64, format, sample_rate}``, each chunk
encoded alone in ``response_format``, a last one with ``finish_reason``, then ``data: [DONE]``. Timing and serving
runs (``adversary.measure`` ttfb or stream) ask for it with ``response_format: pcm`` (the only format whose chunks
concatenate) and read it with ``stream_decode.SglangSseStream``; an answer without its final event was cut short
(a pipeline failure after the 200 just ends the body).
Errors: FastAPI's 422 ``{"detail": [...]}`` (a body that does not validate; permanent) and 500 ``{"detail": "..."}``
for any pipeline failure, including a reference path the server cannot open (retried; the same 500 error twice,
compared by meaning with addresses, ids and times set aside, stops early as permanent).

Readiness: ``GET /health`` answers 200 ``{"status": "healthy"}`` once the pipeline runs, 503 before.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from clonebench.adversary.base import (
    Adversary,
    PreparedRequest,
    SynthesisInput,
    not_ready,
)
from clonebench.adversary.openai_speech import server_root
from clonebench.adversary.raw_pcm import fastapi_error, pcm_to_wav
from clonebench.adversary.staging import ReferenceShare, read_share
from clonebench.adversary.stream_decode import PcmStream, SglangSseStream, events_to_wav
from clonebench.core.config_reader import ConfigReader

UPSTREAM_COMMIT = "2489a10eecb91bbd1bdbe8b511b0bdf23d341f3f"
PIPELINES = ("s2_pro", "qwen3_tts")
RATES = {"s2_pro": 44_100, "qwen3_tts": 24_000}      # the codecs' rates (S2-Pro DAC; Qwen3-TTS tokenizer)
REFERENCE_FORMS = {"s2_pro": "references", "qwen3_tts": "ref_audio"}  # what each pipeline reads
TASK_TYPES = {"s2_pro": None, "qwen3_tts": "base"}   # Qwen3-TTS clones only with task_type "base"
SEED_READ = {"s2_pro": False, "qwen3_tts": False}    # does the pipeline read tts_params["seed"]? (neither does)
# the route's SamplingParams when a field is not sent (openai_api._build_speech_generate_request)
SERVER_SAMPLING = {"temperature": 0.8, "top_p": 0.8, "top_k": 30, "repetition_penalty": 1.1, "max_new_tokens": None}


def describe_error(status: int, body: bytes) -> str | None:
    explained = fastapi_error(status, body)
    return f"SGLang-Omni: {explained}" if explained else None


class SGLangOmniSpeech(Adversary):
    protocol = "sglang_omni_speech"
    supports_timing = True  # stream: true (SSE, pcm chunks)
    seed_ignored = True  # set per pipeline in __init__ (SEED_READ)

    @classmethod
    def read_params(cls, reader: ConfigReader) -> dict[str, Any]:
        pipeline = reader.str("adversary.pipeline", choices=PIPELINES)
        params = {
            "reference_share": read_share(reader),
            "pipeline": pipeline,
            "reference_form": reader.str("adversary.reference_form", None, choices=("references", "ref_audio"),
                                         allow_none=True) or REFERENCE_FORMS[pipeline],
            "task_type": reader.str("adversary.task_type", None, allow_none=True) or TASK_TYPES[pipeline],
            "model": reader.str("adversary.model", None, allow_none=True),
            "response_format": reader.str("adversary.response_format", choices=("wav", "pcm")),
            "sample_rate": reader.int("adversary.sample_rate", None, minimum=1, allow_none=True) or RATES[pipeline],
            "temperature": reader.float("adversary.temperature", None, minimum=0.0, allow_none=True),
            "top_p": reader.float("adversary.top_p", None, minimum=0.0, maximum=1.0, allow_none=True),
            "top_k": reader.int("adversary.top_k", None, allow_none=True),
            "repetition_penalty": reader.float("adversary.repetition_penalty", None, minimum=0.0, allow_none=True),
            "max_new_tokens": reader.int("adversary.max_new_tokens", None, minimum=1, allow_none=True),
        }
        return params

    def __init__(self, client, params):
        super().__init__(client, params)
        self.share = ReferenceShare.from_params(params["reference_share"], self.protocol)
        self.seed_ignored = not SEED_READ[params["pipeline"]]

    def request_fingerprint_fields(self) -> dict[str, Any]:
        fields = super().request_fingerprint_fields()
        fields.pop("reference_share")  # where the file lives, not what it holds (its hash is in the inputs)
        return fields

    def effective_sampling(self) -> dict[str, Any]:
        return {name: default if self.params[name] is None else self.params[name]
                for name, default in SERVER_SAMPLING.items()}

    def check_samples(self, samples: list) -> None:
        self.share.require()

    def release(self) -> dict[str, Any]:
        return {"reference_share": self.share.release()}

    def track_staging(self, note, leftovers: list[dict]) -> None:
        self.share.note = note
        self.share.adopt(leftovers)

    async def check_ready(self, http: httpx.AsyncClient, endpoint_url: str) -> dict[str, Any]:
        url = str(server_root(endpoint_url).join("health"))
        try:
            response = await http.get(url)
        except httpx.HTTPError as exc:
            raise not_ready(f"SGLang-Omni not ready: GET {url} failed: {exc!r}. Start `sgl-omni serve` or fix "
                            "adversary.endpoint_url", may_recover=True) from exc
        try:
            status = response.json().get("status")
        except (ValueError, AttributeError):
            status = None
        if response.status_code != 200 or status != "healthy":
            raise not_ready(f"SGLang-Omni not ready: GET {url} answered HTTP {response.status_code} "
                            f"{response.text[:200]!r}; expected 200 {{\"status\": \"healthy\"}}",
                            may_recover=response.status_code >= 500)
        return {"url": url, "status_code": 200, "status": status}

    def to_wav(self, body: bytes) -> bytes:
        return pcm_to_wav(body, sample_rate=self.params["sample_rate"], sample_format="s16le", server="SGLang-Omni")

    def stream_decoder(self, collect: bool = False) -> SglangSseStream:
        return SglangSseStream(PcmStream(self.params["sample_rate"], collect=collect))

    def events_to_wav(self, body: bytes) -> bytes:
        return events_to_wav(self.stream_decoder(collect=True), body, "SGLang-Omni")

    def request_body(self, item: SynthesisInput, server_path: str) -> dict[str, Any]:
        p = self.params
        body: dict[str, Any] = {"input": item.text}
        if p["model"] is not None:
            body["model"] = p["model"]
        if p["task_type"] is not None:
            body["task_type"] = p["task_type"]
        if p["reference_form"] == "references":
            body["references"] = [{"audio_path": server_path, "text": item.reference_text}]
        else:
            body.update(ref_audio=server_path, ref_text=item.reference_text)
        streams = self.client.streams  # events of pcm chunks (the only format whose chunks concatenate)
        body.update(response_format="pcm" if streams else p["response_format"], stream=streams)
        for name in SERVER_SAMPLING:
            if p[name] is not None:
                body[name] = p[name]
        if item.seed is not None:
            body["seed"] = item.seed
        return body

    def prepare(self, item: SynthesisInput) -> PreparedRequest:
        server_path, _ = self.share.stage(item.reference_audio, item.reference_container)
        content = json.dumps(self.request_body(item, server_path), ensure_ascii=False).encode("utf-8")
        if self.client.streams:
            return PreparedRequest("POST", self.client.endpoint_url, content, {"Content-Type": "application/json"},
                                   stream=True, to_wav=self.events_to_wav, describe_error=describe_error,
                                   decoder=self.stream_decoder)
        return PreparedRequest("POST", self.client.endpoint_url, content, {"Content-Type": "application/json"},
                               to_wav=self.to_wav if self.params["response_format"] == "pcm" else None,
                               describe_error=describe_error)
