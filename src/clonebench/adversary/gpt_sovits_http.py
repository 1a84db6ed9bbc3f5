"""GPT-SoVITS ``api_v2.py`` (read at RVC-Boss/GPT-SoVITS 48b1a0169a28582a8984402f82cf438d3bfa6aca, 2026-08-18):
JSON ``POST /tts``.

Body (``TTS_Request``): ``text``, ``text_lang``, ``ref_audio_path`` (a file **on the server's disk**: staged here
through ``adversary.reference_share``, see ``staging.py``), ``prompt_text``, ``prompt_lang``, sampling (``top_k``,
``top_p``, ``temperature``, ``repetition_penalty``), ``text_split_method``, ``speed_factor``, ``seed`` (-1 draws a
random one), ``media_type`` (wav, raw, ogg, aac) and ``streaming_mode`` (0-3 or a bool). Languages: ``check_params``
compares ``text_lang.lower()`` with the config's list, but ``TTS.run`` then asserts the value *as sent* is in it,
so the codes are sent in lower case; v1 models accept fewer codes than v2/v2Pro/v3/v4 (``TTS_Config``). The
reference must be 3-10 s (``_set_ref_audio_path``: 48000-160000 samples at 16 kHz), else ``tts failed``.

Answers: a WAV at the model's rate (32 kHz for v2) or, with ``media_type: raw``, header-less s16le. In a streaming
mode the first chunk is a WAV header written by ``wave`` with no frames, i.e. a data size of 0, then raw PCM: the
header is rewritten here to the size received (``to_wav``). Errors are 400 ``{"message": ..., "Exception": ...}``
(parameter checks, and any pipeline failure as ``tts failed``). A failure inside the pipeline also makes it yield
1 s of zeros (16 kHz) first, so a 200 whose audio is all zeros is a failed attempt here, never a silent clip; a
streamed answer cut short (the pipeline raising after the 200) ends the stream, read as a failed attempt.

Readiness: api_v2 has no health route (the model loads before the app listens); the probe is ``POST /tts`` with an
empty body, which the server answers 400 ``{"message": "ref_audio_path is required"}`` without synthesizing.
"""

from __future__ import annotations

import io
import json
from typing import Any

import httpx
import numpy as np
import soundfile as sf

from clonebench.adversary.base import (
    Adversary,
    PreparedRequest,
    ReferenceRule,
    SynthesisInput,
    not_ready,
)
from clonebench.adversary.staging import ReferenceShare, read_share
from clonebench.adversary.stream_decode import PcmStream
from clonebench.adversary.stream_decode import finalize_streamed_wav as fix_streamed_header  # api_v2: size 0
from clonebench.core.config_reader import ConfigReader
from clonebench.core.errors import ConfigError
from clonebench.data.audio import InvalidAudio

# GPT_SoVITS/TTS_infer_pack/TTS.py TTS_Config (48b1a01): v1 models, and v2 / v2Pro / v3 / v4
LANGUAGES = {"v1": ("auto", "en", "zh", "ja", "all_zh", "all_ja"),
             "v2": ("auto", "auto_yue", "en", "zh", "ja", "yue", "ko", "all_zh", "all_ja", "all_yue", "all_ko")}
SPLIT_METHODS = ("cut0", "cut1", "cut2", "cut3", "cut4", "cut5")  # text_segmentation_method.py
REFERENCE_RULE = ReferenceRule(3.0, 10.0, "GPT-SoVITS TTS._set_ref_audio_path, 48000-160000 samples at 16 kHz (48b1a01)")
READY_MESSAGE = "ref_audio_path is required"


def not_all_zero(wav: bytes) -> bytes:
    """GPT-SoVITS answers 1 s of zeros when its pipeline fails (or makes no audio): refused as a failed attempt."""
    samples, rate = sf.read(io.BytesIO(wav), dtype="float32", always_2d=True)
    if samples.size and not np.any(samples):
        raise InvalidAudio(f"the audio is all zeros ({samples.shape[0] / rate:.2f} s at {rate} Hz): GPT-SoVITS "
                           "answers silence when its pipeline fails (see the server's log)")
    return wav


def describe_error(status: int, body: bytes) -> str | None:
    """api_v2's ``{"message": ..., "Exception": ...}`` (400) as one line."""
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    if not isinstance(payload, dict) or "message" not in payload:
        return None
    exception = payload.get("Exception")
    return f"GPT-SoVITS: {payload['message']}" + (f" ({exception})" if exception else "")


class GPTSoVITSHTTP(Adversary):
    protocol = "gpt_sovits_http"
    supports_timing = True  # with streaming_mode 2 or 3 the answer starts before the synthesis ends

    @classmethod
    def read_params(cls, reader: ConfigReader) -> dict[str, Any]:
        version = reader.str("adversary.languages", choices=tuple(LANGUAGES))
        params = {
            "reference_share": read_share(reader),
            "languages": version,
            "text_lang": reader.str("adversary.text_lang", None, allow_none=True),
            "prompt_lang": reader.str("adversary.prompt_lang", None, allow_none=True),
            "top_k": reader.int("adversary.top_k", minimum=1),
            "top_p": reader.float("adversary.top_p", minimum=0.0, maximum=1.0),
            "temperature": reader.float("adversary.temperature", minimum=0.0),
            "repetition_penalty": reader.float("adversary.repetition_penalty", minimum=0.0),
            "text_split_method": reader.str("adversary.text_split_method", choices=SPLIT_METHODS),
            "speed_factor": reader.float("adversary.speed_factor", minimum=0.01),
            "streaming_mode": reader.int("adversary.streaming_mode", minimum=0, maximum=3),
            "media_type": reader.str("adversary.media_type", choices=("wav", "raw")),
            "raw_sample_rate": reader.int("adversary.raw_sample_rate", minimum=1),
            "reference_duration_check": reader.bool("adversary.reference_duration_check"),
        }
        for key in ("text_lang", "prompt_lang"):
            code = params[key]
            if code is not None and code.lower() not in LANGUAGES[version]:
                raise ConfigError(f"{reader.source}: adversary.{key}={code!r} is not a GPT-SoVITS {version} language "
                                  f"code; one of {list(LANGUAGES[version])} (or null: the pair's own language)")
        return params

    def __init__(self, client, params):
        super().__init__(client, params)
        self.share = ReferenceShare.from_params(params["reference_share"], self.protocol)

    def request_fingerprint_fields(self) -> dict[str, Any]:
        fields = super().request_fingerprint_fields()
        for name in ("reference_share", "reference_duration_check"):  # where the file lives; a client-side check
            fields.pop(name)
        return fields

    def effective_sampling(self) -> dict[str, Any]:
        p = self.params
        return {name: p[name] for name in ("temperature", "top_p", "top_k", "repetition_penalty")}

    def reference_rule(self) -> ReferenceRule | None:
        return REFERENCE_RULE if self.params["reference_duration_check"] else None

    def language(self, pair_language: str | None, key: str) -> str:
        code = (self.params[key] or pair_language or "").lower()
        if code not in LANGUAGES[self.params["languages"]]:
            raise ConfigError(f"language {pair_language!r} is not a GPT-SoVITS {self.params['languages']} code "
                              f"({list(LANGUAGES[self.params['languages']])}); the server would refuse it with 400. "
                              f"Set adversary.{key}=<code> (e.g. auto) or select other pairs")
        return code

    def check_samples(self, samples: list) -> None:
        self.share.require()
        for sample in samples:
            self.language(sample.row.target_language, "text_lang")
            self.language(sample.row.prompt_language, "prompt_lang")

    def release(self) -> dict[str, Any]:
        return {"reference_share": self.share.release()}

    def track_staging(self, note, leftovers: list[dict]) -> None:
        self.share.note = note
        self.share.adopt(leftovers)

    async def check_ready(self, http: httpx.AsyncClient, endpoint_url: str) -> dict[str, Any]:
        try:
            response = await http.post(endpoint_url, content=b"{}", headers={"Content-Type": "application/json"})
        except httpx.HTTPError as exc:
            raise not_ready(f"GPT-SoVITS api_v2 not ready: POST {endpoint_url} (empty probe) failed: {exc!r}. Start "
                            "`python api_v2.py` or fix adversary.endpoint_url", may_recover=True) from exc
        try:
            message = response.json().get("message")
        except (ValueError, AttributeError):
            message = None
        if response.status_code != 400 or message != READY_MESSAGE:
            raise not_ready(f"GPT-SoVITS api_v2 not ready: POST {endpoint_url} with an empty body answered HTTP "
                            f"{response.status_code} {response.text[:200]!r}; expected 400 "
                            f"{{\"message\": \"{READY_MESSAGE}\"}}", may_recover=response.status_code >= 500)
        return {"url": endpoint_url, "probe": "POST /tts with an empty body", "status_code": 400}

    def to_wav(self, body: bytes) -> bytes:
        if self.params["media_type"] == "raw":
            if len(body) % 2:
                raise InvalidAudio(f"raw body of {len(body)} bytes is not whole 16-bit samples (cut short)")
            out = io.BytesIO()
            sf.write(out, np.frombuffer(body, dtype="<i2"), self.params["raw_sample_rate"], subtype="PCM_16",
                     format="WAV")
            body = out.getvalue()
        return not_all_zero(fix_streamed_header(body))

    def prepare(self, item: SynthesisInput) -> PreparedRequest:
        p = self.params
        server_path, _ = self.share.stage(item.reference_audio, item.reference_container)
        body = {
            "text": item.text,
            "text_lang": self.language(item.language, "text_lang"),
            "ref_audio_path": server_path,
            "prompt_text": item.reference_text,
            "prompt_lang": self.language(item.prompt_language or item.language, "prompt_lang"),
            "top_k": p["top_k"], "top_p": p["top_p"], "temperature": p["temperature"],
            "repetition_penalty": p["repetition_penalty"],
            "text_split_method": p["text_split_method"],
            "speed_factor": p["speed_factor"],
            "seed": -1 if item.seed is None else item.seed,
            "media_type": p["media_type"],
            "streaming_mode": p["streaming_mode"],
        }
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        return PreparedRequest("POST", self.client.endpoint_url, content, {"Content-Type": "application/json"},
                               stream=self.client.streams, to_wav=self.to_wav, describe_error=describe_error,
                               decoder=self.stream_decoder if p["streaming_mode"] else None)

    def stream_decoder(self) -> PcmStream:
        """A streamed answer: header-less s16le at raw_sample_rate, or a WAV header (placeholder sizes) first."""
        if self.params["media_type"] == "raw":
            return PcmStream(self.params["raw_sample_rate"])
        return PcmStream(self.params["raw_sample_rate"], wav_header="always")
