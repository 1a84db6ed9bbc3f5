"""The OpenAI-compatible ``/v1/audio/speech`` contract (vLLM-Omni) as the stand-in enforces it
(shared notes, server_protocols.md section 3). JSON only; errors ``{"error": {message, type, param, code}}``;
``ref_audio`` must be a ``data:`` URI here (the stand-in fetches no URLs; raw base64 is rejected as by vLLM);
``ref_text`` is required with ``ref_audio``; a reference soundfile cannot decode, or outside 1-30 s, is a 400;
``seed``, ``max_new_tokens`` and ``sample_rate`` are lax ints ("42" is 42); ``extra_params`` must be an object;
response formats wav, pcm, flac, mp3, opus (vllm-omni 01bc417); ``GET /health`` and ``GET /v1/models``.
"""

from __future__ import annotations

import base64
import binascii
import io
import json

import numpy as np
import soundfile as sf
from scipy.signal import resample_poly

from clonebench.standin.fish_api import HTTPFailure, media_type

REF_MIN_S, REF_MAX_S = 1.0, 30.0
# response_format -> soundfile format, content type, options (vLLM-Omni AudioMixin.create_audio)
FORMATS = {"wav": ("WAV", "audio/wav", {}), "pcm": ("RAW", "audio/pcm", {"subtype": "PCM_16"}),
           "flac": ("FLAC", "audio/flac", {}), "mp3": ("MP3", "audio/mpeg", {}),
           "opus": ("OGG", "audio/ogg", {"subtype": "OPUS"})}

MODEL_ID = "fishaudio/s2-pro"
ROUTES = {"/health": ("GET",), "/v1/models": ("GET",), "/v1/audio/speech": ("POST",)}


def error(status: int, message: str, param: str | None = None) -> HTTPFailure:
    kind = {400: "BadRequestError", 404: "NotFoundError", 405: "MethodNotAllowed"}.get(status, "InternalServerError")
    body = {"error": {"message": message, "type": kind, "param": param, "code": status}}
    return HTTPFailure(status, message, raw=json.dumps(body).encode())


def _lax_int(data: dict, name: str, minimum: int | None = None, maximum: int | None = None):
    """pydantic 2 lax int: ints, integral floats and numeric strings ("42"); anything else is a 400."""
    value = data.get(name)
    if value is None:
        return None
    try:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError
        number = int(value.strip()) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise error(400, f"{name}: Input should be a valid integer, got {value!r}", name) from None
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise error(400, f"{name} must be in {minimum}..{maximum}", name)
    return number


def _reference(data: dict) -> list[dict]:
    """The decoded reference, refused like vLLM-Omni: a data URI only here, ref_text required, audio that soundfile
    can decode, 1-30 s long (serving_speech _REF_AUDIO_MIN/MAX_DURATION)."""
    ref_audio = data.get("ref_audio")
    if ref_audio is None:
        return []
    if not isinstance(ref_audio, str) or not ref_audio.startswith("data:"):
        raise error(400, "ref_audio must be an http(s) URL, a data: URI or a file:// path; raw base64 is not "
                         "accepted (the stand-in fetches no URLs)", "ref_audio")
    if not isinstance(data.get("ref_text"), str) or not data["ref_text"].strip():
        raise error(400, "Voice cloning requires 'ref_text' (transcript of the reference audio)", "ref_text")
    try:
        audio = base64.b64decode(ref_audio.split(",", 1)[1], validate=False)
        duration = sf.info(io.BytesIO(audio)).duration
    except (IndexError, binascii.Error, ValueError, RuntimeError, sf.LibsndfileError) as exc:
        raise error(400, f"Failed to decode ref_audio: {exc}", "ref_audio") from None
    if not REF_MIN_S <= duration <= REF_MAX_S:
        raise error(400, f"Reference audio duration {duration:.2f}s is outside the supported range "
                         f"[{REF_MIN_S}, {REF_MAX_S}]s", "ref_audio")
    return [{"audio": audio, "text": data["ref_text"]}]


def parse(content_type: str | None, raw: bytes) -> dict:
    if media_type(content_type) != "application/json":
        raise error(400, f"Unsupported content type {content_type!r}: the body must be JSON")
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise error(400, f"Invalid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise error(400, "The body must be a JSON object")
    text = data.get("input")
    if not isinstance(text, str) or not text.strip():
        raise error(400, "Input text cannot be empty", "input")
    if data.get("model") not in (None, MODEL_ID):
        raise error(404, f"The model `{data['model']}` does not exist.", "model")
    response_format = data.get("response_format", "wav")
    if response_format not in FORMATS:
        raise error(400, f"response_format: Input should be one of {sorted(FORMATS)}", "response_format")
    _lax_int(data, "max_new_tokens", 1, 4096)
    sample_rate = _lax_int(data, "sample_rate", 1)
    extra = data.get("extra_params")
    if extra is not None and not isinstance(extra, dict):
        raise error(400, "extra_params must be a JSON object/dict.", "extra_params")
    return {"text": text, "references": _reference(data), "seed": _lax_int(data, "seed"), "format": response_format,
            "streaming": False, "voice": data.get("voice", "default"), "sample_rate": sample_rate,
            "extra_params": extra or {}}


def encode(wav: bytes, response_format: str, sample_rate: int | None) -> tuple[bytes, str]:
    """The synthesized WAV in the requested format, written with soundfile as vLLM-Omni's AudioMixin does (so opus
    at the 44.1 kHz codec rate fails, as it does there, unless sample_rate asks for an Opus rate such as 48000)."""
    samples, rate = sf.read(io.BytesIO(wav), dtype="float32")
    if sample_rate and sample_rate != rate:
        samples, rate = resample_poly(samples, sample_rate, rate).astype(np.float32), sample_rate
    kind, content_type, kwargs = FORMATS[response_format]
    out = io.BytesIO()
    try:
        sf.write(out, samples, rate, format=kind, **kwargs)
    except (RuntimeError, sf.LibsndfileError, ValueError) as exc:
        raise error(500, f"Speech generation failed: {exc}") from exc
    return out.getvalue(), content_type


def models() -> bytes:
    return json.dumps({"object": "list", "data": [{"id": MODEL_ID, "object": "model", "owned_by": "stand-in"}]}).encode()
