"""CosyVoice 2/3 FastAPI server (``runtime/python/fastapi/server.py``): ``POST /inference_zero_shot``.

Read at FunAudioLLM/CosyVoice ace7c47f41bbd303aa6bf1ea80e6f9fbd595cd40 (2026-03-16), the spec of this module:

- request: multipart form, ``tts_text`` and ``prompt_text`` (``Form()``, both required) and the file part
  ``prompt_wav`` (``UploadFile``), read by ``load_wav(prompt_wav.file, 16000)``: soundfile decodes it (WAV, FLAC,
  OGG; MP3 with a libsndfile that has it) and refuses a rate below 16 kHz with an AssertionError, a plain
  ``500 Internal Server Error`` (text/plain, before any audio). A missing field is FastAPI's ``422 {"detail":
  [...]}``. CosyVoice 3 expects ``prompt_text`` to start with its system prompt
  (``You are a helpful assistant.<|endofprompt|>``, example.py): ``adversary.prompt_prefix``;
- no seed: sampling uses the process's global RNG (``accepts_seed`` false: none is sent, the run records
  ``seeded: false``);
- answer: ``StreamingResponse(generate_data(...))``: each model chunk as raw int16 PCM (``* 2**15``), no header, no
  Content-Type, chunked, at the model's rate (``configs['sample_rate']``: 24000 for CosyVoice 2 and 3, 22050 for
  CosyVoice 1): ``adversary.sample_rate``. The 200 is sent before the model runs, so a model failure breaks the
  chunked stream: before its first byte (what the real app does when the model raises at once, e.g. upstream
  issue #1805, where every zero-shot request fails so) it is a failed attempt, ``InvalidAudio``, not resent
  (``FAILED_BEFORE_AUDIO``), as a clean empty 200 is (``raw_pcm.pcm_to_wav``); cut after some audio it is an
  unknown outcome, retried (a network cut looks the same);
- the reference: the speech tokenizer refuses a prompt over 30 s (``frontend._extract_speech_token`` asserts it,
  inside the stream: a cut answer): refused here before any request when ``reference_duration_check``;
- readiness: the server has no health route, but it loads the model before ``uvicorn.run``: once FastAPI's own
  ``GET /openapi.json`` answers and lists the endpoint's path, the model is loaded.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import httpx

from clonebench.adversary.base import Adversary, PreparedRequest, ReferenceRule, SynthesisInput, not_ready
from clonebench.adversary.raw_pcm import SAMPLE_FORMATS, fastapi_error, multipart_form, pcm_to_wav
from clonebench.adversary.stream_decode import PCM_WIDTH, PcmStream
from clonebench.core.config_reader import ConfigReader

UPSTREAM_COMMIT = "ace7c47f41bbd303aa6bf1ea80e6f9fbd595cd40"
REFERENCE_RULE = ReferenceRule(None, 30.0,
                               f"CosyVoice frontend._extract_speech_token (assert <= 30 s, {UPSTREAM_COMMIT[:8]})")
EXTENSIONS = {"WAV": "wav", "MP3": "mp3", "FLAC": "flac", "OGG": "ogg"}
FAILED_BEFORE_AUDIO = ("CosyVoice sends its 200 before the model runs, so its model failed before any audio "
                       "(upstream issue #1805; the server's log says why)")


def openapi_url(endpoint_url: str) -> str:
    """``http://h:p/inference_zero_shot`` -> ``http://h:p/openapi.json`` (FastAPI's schema, at the app's root)."""
    return str(httpx.URL(endpoint_url).join("openapi.json"))


class CosyVoiceHTTP(Adversary):
    protocol = "cosyvoice_http"

    supports_timing = True
    accepts_seed = False  # /inference_zero_shot has no seed: the server's global RNG samples

    @classmethod
    def read_params(cls, reader: ConfigReader) -> dict[str, Any]:
        return {
            "sample_rate": reader.int("adversary.sample_rate", minimum=8000, maximum=192000),
            "sample_format": reader.str("adversary.sample_format", choices=tuple(SAMPLE_FORMATS)),
            "prompt_prefix": reader.str("adversary.prompt_prefix"),
            "reference_duration_check": reader.bool("adversary.reference_duration_check"),
        }

    def request_fingerprint_fields(self) -> dict[str, Any]:
        fields = super().request_fingerprint_fields()
        fields.pop("reference_duration_check")  # a client-side check; the request is the same
        return fields

    def effective_sampling(self) -> dict[str, Any]:
        return {"sampling": "the model's own (cosyvoice.yaml), not settable per request", "seed": None}

    def reference_rule(self) -> ReferenceRule | None:
        return REFERENCE_RULE if self.params["reference_duration_check"] else None

    async def check_ready(self, http: httpx.AsyncClient, endpoint_url: str) -> dict[str, Any]:
        url, path = openapi_url(endpoint_url), httpx.URL(endpoint_url).path
        try:
            response = await http.get(url)
        except httpx.HTTPError as exc:
            raise not_ready(f"CosyVoice server not ready: GET {url} failed: {exc!r}. Start runtime/python/fastapi/"
                            "server.py (it answers once its model is loaded) or fix adversary.endpoint_url",
                            may_recover=True) from exc
        try:
            paths = response.json().get("paths", {}) if response.status_code == 200 else None
        except (ValueError, AttributeError):
            paths = None
        if not isinstance(paths, dict) or "post" not in (paths.get(path) or {}):
            listed = sorted(paths) if isinstance(paths, dict) else None
            raise not_ready(f"CosyVoice server not ready: GET {url} answered HTTP {response.status_code} "
                            f"{response.text[:200]!r}; expected FastAPI's schema listing POST {path} (listed: "
                            f"{listed})", may_recover=response.status_code >= 500)
        return {"url": url, "status_code": 200, "route": path, "probe": "FastAPI /openapi.json (no health route)"}

    def prepare(self, item: SynthesisInput) -> PreparedRequest:
        extension = EXTENSIONS.get(item.reference_container, "wav")
        content, content_type = multipart_form(
            [("tts_text", item.text), ("prompt_text", self.params["prompt_prefix"] + item.reference_text)],
            [("prompt_wav", f"prompt.{extension}", item.reference_mime, item.reference_audio)])
        to_wav = partial(pcm_to_wav, sample_rate=self.params["sample_rate"], sample_format=self.params["sample_format"],
                         server="CosyVoice")
        return PreparedRequest("POST", self.client.endpoint_url, content, {"Content-Type": content_type},
                               stream=self.client.streams, to_wav=to_wav, describe_error=fastapi_error,
                               decoder=partial(PcmStream, self.params["sample_rate"],
                                               PCM_WIDTH[self.params["sample_format"]]),
                               failed_before_audio=FAILED_BEFORE_AUDIO)
