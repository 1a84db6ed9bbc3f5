"""Zonos 2 API server (``python/zonos2/server/api_server.py``): JSON ``POST /tts/generate``.

Read at Zyphra/ZONOS2 8fee419a5850581411edea6c456481076e2d23ea (2026-06-16), the spec of this module:

- request: ``TTSGenerateRequest`` (pydantic; unknown fields ignored): ``text``, ``language`` (normalised by
  ``_normalize_tts_request_language``: lower case, ``-`` -> ``_``, one of ``SERVER_LANGUAGES``, else 400),
  ``seed`` (``int | None``, into ``TTSSamplingParams``; the OpenAI-style ``/v1/audio/speech`` drops it, so this
  adapter never uses that route), sampling (``temperature`` 1.15, ``topk`` 106, ``top_p`` 0, ``min_p`` 0.18,
  ``repetition_window`` 50, ``repetition_penalty`` 1.2, ``repetition_codebooks`` 8, ``max_tokens`` null = the
  model's ``max_seq_len``), ``text_normalization``, ``accurate_mode``, ``clean_speaker_background``,
  ``fade_out_ms``, ``stream`` (default true) and the reference as ``speaker_audio_base64`` (plain base64 or a data
  URL, any format ffmpeg reads, transcoded to mono PCM for the speaker embedder). The transcript is not used;
- answer: float32 little-endian mono PCM at 44.1 kHz, ``audio/pcm`` with ``X-Audio-Sample-Rate: 44100``,
  ``X-Audio-Channels: 1``, ``X-Audio-Format: float32``; streamed (chunked) unless ``stream`` is false. A model
  that ends without audio gives a 200 with an empty body: a failed attempt here, as is a body that is not whole
  finite float32 samples within [-1, 1] (``raw_pcm.pcm_to_wav``);
- errors: ``HTTPException`` 400 ``{"detail": "..."}`` (bad base64, audio ffmpeg cannot read, unsupported language,
  a model without speaker conditioning), 500 ``{"detail": ...}`` (RuntimeError), FastAPI's 422 for a malformed
  body;
- readiness: ``GET /tts/capabilities`` (after the backend started): 200 with ``speaker_enabled`` (a model without
  it cannot clone: refused) and ``text_norm_languages``.
"""

from __future__ import annotations

import base64
import json
from functools import partial
from typing import Any

import httpx

from clonebench.adversary.base import Adversary, PreparedRequest, SynthesisInput, not_ready
from clonebench.adversary.raw_pcm import SAMPLE_FORMATS, fastapi_error, pcm_to_wav
from clonebench.adversary.stream_decode import PCM_WIDTH, PcmStream
from clonebench.core.config_reader import ConfigReader
from clonebench.core.errors import ConfigError

UPSTREAM_COMMIT = "8fee419a5850581411edea6c456481076e2d23ea"
# zonos2/tokenizer/textnorm.py SERVER_TO_NEMO_LANG (the codes /tts/generate accepts)
SERVER_LANGUAGES = ("en_us", "en_gb", "fr_fr", "de", "es", "it", "pt_br", "ja", "cmn", "ko")
# a pair's language (ISO 639-1 or a locale, any case) -> the server's code
LANGUAGE_CODES = {"en": "en_us", "en_us": "en_us", "en_gb": "en_gb", "fr": "fr_fr", "fr_fr": "fr_fr", "de": "de",
                  "es": "es", "it": "it", "pt": "pt_br", "pt_br": "pt_br", "ja": "ja", "zh": "cmn", "cmn": "cmn",
                  "zh_cn": "cmn", "ko": "ko"}
SAMPLING = ("temperature", "topk", "top_p", "min_p", "repetition_window", "repetition_penalty",
            "repetition_codebooks", "max_tokens")


def server_language(language: str) -> str | None:
    """The Zonos code for a pair's language, or None when the server has none for it."""
    return LANGUAGE_CODES.get(str(language or "").strip().lower().replace("-", "_"))


def capabilities_url(endpoint_url: str) -> str:
    """``http://h:p/tts/generate`` -> ``http://h:p/tts/capabilities``."""
    return str(httpx.URL(endpoint_url).join("capabilities"))


class Zonos2HTTP(Adversary):
    protocol = "zonos2_http"

    supports_timing = True

    @classmethod
    def read_params(cls, reader: ConfigReader) -> dict[str, Any]:
        language = reader.str("adversary.language", allow_none=True)
        if language is not None and language not in SERVER_LANGUAGES:
            raise ConfigError(f"adversary.language={language!r}: Zonos 2 accepts {list(SERVER_LANGUAGES)} "
                              "(null: each pair's own language)")
        return {
            "language": language,
            "temperature": reader.float("adversary.temperature", minimum=0.0),
            "topk": reader.int("adversary.topk", minimum=0),
            "top_p": reader.float("adversary.top_p", minimum=0.0, maximum=1.0),
            "min_p": reader.float("adversary.min_p", minimum=0.0, maximum=1.0),
            "repetition_window": reader.int("adversary.repetition_window", minimum=0),
            "repetition_penalty": reader.float("adversary.repetition_penalty", minimum=1.0),
            "repetition_codebooks": reader.int("adversary.repetition_codebooks", minimum=-1),
            "max_tokens": reader.int("adversary.max_tokens", minimum=1, allow_none=True),
            "text_normalization": reader.bool("adversary.text_normalization"),
            "accurate_mode": reader.bool("adversary.accurate_mode"),
            "clean_speaker_background": reader.bool("adversary.clean_speaker_background"),
            "fade_out_ms": reader.float("adversary.fade_out_ms", minimum=0.0),
            "stream": reader.bool("adversary.stream"),
            "sample_rate": reader.int("adversary.sample_rate", minimum=8000, maximum=192000),
            "sample_format": reader.str("adversary.sample_format", choices=tuple(SAMPLE_FORMATS)),
        }

    def request_fingerprint_fields(self) -> dict[str, Any]:
        fields = super().request_fingerprint_fields()
        fields.pop("stream")  # streamed or not, the same samples
        return fields

    def effective_sampling(self) -> dict[str, Any]:
        p = self.params
        return {**{name: p[name] for name in SAMPLING},
                **({"max_tokens": "the model's max_seq_len"} if p["max_tokens"] is None else {})}

    def language_for(self, language: str) -> str:
        code = self.params["language"] or server_language(language)
        if code is None:
            raise ConfigError(f"Zonos 2 has no language code for {language!r} (it accepts {list(SERVER_LANGUAGES)}); "
                              "set adversary.language to the code to send, or select other pairs")
        return code

    def check_samples(self, samples: list) -> None:
        for sample in samples:
            self.language_for(sample.row.target_language)

    async def check_ready(self, http: httpx.AsyncClient, endpoint_url: str) -> dict[str, Any]:
        url = capabilities_url(endpoint_url)
        try:
            response = await http.get(url)
        except httpx.HTTPError as exc:
            raise not_ready(f"Zonos 2 server not ready: GET {url} failed: {exc!r}. Start the server "
                            "(python -m zonos2.server.launch) or fix adversary.endpoint_url", may_recover=True) from exc
        try:
            caps = response.json() if response.status_code == 200 else None
        except ValueError:
            caps = None
        if not isinstance(caps, dict) or "speaker_enabled" not in caps:
            raise not_ready(f"Zonos 2 server not ready: GET {url} answered HTTP {response.status_code} "
                            f"{response.text[:200]!r}; expected its capabilities JSON",
                            may_recover=response.status_code >= 500)
        if not caps["speaker_enabled"]:
            raise not_ready(f"Zonos 2 server at {url} serves a model without speaker conditioning "
                            "(speaker_enabled: false): it cannot clone a voice", may_recover=False)
        wanted = self.params["language"]
        if wanted and wanted not in (caps.get("text_norm_languages") or SERVER_LANGUAGES):
            raise not_ready(f"Zonos 2 server at {url} does not list adversary.language={wanted!r} "
                            f"({caps.get('text_norm_languages')})", may_recover=False)
        return {"url": url, "status_code": 200, "speaker_enabled": True,
                "max_tokens": caps.get("max_tokens"), "languages": caps.get("text_norm_languages")}

    def prepare(self, item: SynthesisInput) -> PreparedRequest:
        p = self.params
        body: dict[str, Any] = {
            "text": item.text,
            "language": self.language_for(item.language),
            "seed": item.seed,
            **{name: p[name] for name in SAMPLING},
            "text_normalization": p["text_normalization"],
            "accurate_mode": p["accurate_mode"],
            "clean_speaker_background": p["clean_speaker_background"],
            "fade_out_ms": p["fade_out_ms"],
            "stream": p["stream"],
            "speaker_audio_base64": base64.b64encode(item.reference_audio).decode("ascii"),
            "speaker_audio_name": f"reference.{item.reference_container.lower()}",
        }
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        to_wav = partial(pcm_to_wav, sample_rate=p["sample_rate"], sample_format=p["sample_format"], server="Zonos 2")
        return PreparedRequest("POST", self.client.endpoint_url, content, {"Content-Type": "application/json"},
                               stream=self.client.streams, to_wav=to_wav, describe_error=fastapi_error,
                               decoder=partial(PcmStream, p["sample_rate"], PCM_WIDTH[p["sample_format"]])
                               if p["stream"] else None)
