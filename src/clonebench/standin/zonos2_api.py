"""The Zonos 2 API server (``python/zonos2/server/api_server.py``) as the stand-in emulates it, written from
Zyphra/ZONOS2 8fee419a5850581411edea6c456481076e2d23ea (2026-06-16):

- ``POST /tts/generate``: JSON ``TTSGenerateRequest`` (pydantic: unknown fields ignored; a body that is no JSON
  object, a missing ``text`` or a wrongly typed field is FastAPI's 422 ``{"detail": [...]}``); the reference as
  ``speaker_audio_base64`` (or the legacy ``speaker_wav_base64``): plain base64 or a data URL, strictly decoded
  (else 400 ``{"detail": "speaker_audio_base64 must be valid base64-encoded data."}``), audio the decoder cannot
  read is a 400 (the real server asks ffmpeg; the stand-in soundfile); ``language`` normalised (lower case,
  ``-`` -> ``_``) and one of ``LANGUAGES``, else 400 ``Unsupported language code``; ``seed`` honoured (the
  stand-in's dither follows it); the transcript is not a field;
- success: float32 little-endian mono PCM at 44.1 kHz, ``audio/pcm`` with ``X-Audio-Sample-Rate``,
  ``X-Audio-Channels`` and ``X-Audio-Format`` headers; chunked when ``stream`` (the default), else with a
  Content-Length;
- ``GET /tts/capabilities`` (``speaker_enabled``, ``text_norm_languages``, ``max_tokens`` ...), ``/v1`` and
  ``GET /v1/models``; other paths are FastAPI's 404 ``{"detail": "Not Found"}``;
- faults: ``empty`` (200, no audio: the model finished without any), ``truncate`` (the stream cut short), ``nan``
  (float samples holding NaN), ``not_wav`` (text), ``status`` (``{"detail": message}``), ``reset``,
  ``ignore_reference``.
"""

from __future__ import annotations

import base64
import binascii
import io
import json

import numpy as np
import soundfile as sf

from clonebench.standin.chunked import write_chunked
from clonebench.standin.stream_profile import Layout, scripted_answer
from clonebench.standin.fish_api import HTTPFailure, media_type

UPSTREAM_COMMIT = "8fee419a5850581411edea6c456481076e2d23ea"
SAMPLE_RATE = 44_100
LANGUAGES = ("en_us", "en_gb", "fr_fr", "de", "es", "it", "pt_br", "ja", "cmn", "ko")  # SERVER_TO_NEMO_LANG
MODEL_ID = "Zyphra/ZONOS2"
MAX_TOKENS = 3000
AUDIO_HEADERS = {"X-Audio-Sample-Rate": str(SAMPLE_RATE), "X-Audio-Channels": "1", "X-Audio-Format": "float32"}
ROUTES = {"/tts/generate": ("POST",), "/tts/capabilities": ("GET",), "/v1": ("GET", "POST", "HEAD", "OPTIONS"),
          "/v1/models": ("GET",)}
# TTSGenerateRequest's typed fields the stand-in checks (name -> accepted JSON types)
TYPES = {"text": (str,), "language": (str,), "seed": (int, type(None)), "stream": (bool,),
         "temperature": (int, float), "topk": (int,), "top_p": (int, float), "min_p": (int, float),
         "max_tokens": (int, type(None)), "fade_out_ms": (int, float), "repetition_window": (int,),
         "repetition_penalty": (int, float), "repetition_codebooks": (int,), "text_normalization": (bool,),
         "accurate_mode": (bool,), "clean_speaker_background": (bool,),
         "speaker_audio_base64": (str, type(None)), "speaker_wav_base64": (str, type(None))}


def detail(status: int, message) -> HTTPFailure:
    return HTTPFailure(status, str(message), raw=json.dumps({"detail": message}).encode())


def capabilities() -> dict:
    return {"text_normalization_enabled": True, "text_norm_languages": list(LANGUAGES), "speaker_enabled": True,
            "speaker_embedding_dim": 128, "n_codebooks": 9, "max_tokens": MAX_TOKENS, "speaking_rate_enabled": False,
            "quality_enabled": False, "speaker_audio_upload": True, "speaker_embedding_upload": True}


def _validation(data) -> None:
    if not isinstance(data, dict):
        raise detail(422, [{"type": "model_attributes_type", "loc": ["body"],
                            "msg": "Input should be a valid dictionary or object to extract fields from"}])
    problems = [{"type": "missing", "loc": ["body", "text"], "msg": "Field required", "input": None}] \
        if "text" not in data else []
    for name, types in TYPES.items():
        value = data.get(name)
        if name in data and (not isinstance(value, types) or (isinstance(value, bool) and bool not in types)):
            problems.append({"type": "type_error", "loc": ["body", name], "msg": f"Input should be {types[0].__name__}",
                             "input": value})
    if problems:
        raise detail(422, problems)


def parse(content_type: str | None, raw: bytes) -> dict:
    if media_type(content_type) != "application/json":  # FastAPI reads a non-JSON body as no body
        raise detail(422, [{"type": "missing", "loc": ["body"], "msg": "Field required", "input": None}])
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise detail(422, [{"type": "json_invalid", "loc": ["body", 0], "msg": "JSON decode error",
                            "ctx": {"error": str(exc)}}]) from None
    _validation(data)
    references = []
    blob = data.get("speaker_audio_base64") or data.get("speaker_wav_base64")
    if blob:
        payload = blob.strip()
        if payload.startswith("data:"):
            if "," not in payload:
                raise detail(400, "Invalid data URL for speaker_audio_base64.")
            payload = payload.split(",", 1)[1]
        try:
            audio = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise detail(400, "speaker_audio_base64 must be valid base64-encoded data.") from None
        if not audio:
            raise detail(400, "Reference file is empty.")
        try:
            sf.info(io.BytesIO(audio))
        except (RuntimeError, sf.LibsndfileError, ValueError):
            raise detail(400, "Reference file must contain an audio stream supported by ffmpeg.") from None
        references = [{"audio": audio, "text": ""}]  # no transcript: the stand-in's rate follows the default
    language = str(data.get("language", "en_us") or "").strip().lower().replace("-", "_")
    if language not in LANGUAGES:
        raise detail(400, f"Unsupported language code: {data.get('language')!r}. Supported: {', '.join(LANGUAGES)}.")
    max_tokens = data.get("max_tokens")
    if max_tokens is not None and max_tokens <= 0:
        raise detail(400, "max_tokens must be positive.")
    return {"text": data["text"], "seed": data.get("seed"), "references": references, "language": language,
            "stream": data.get("stream", True)}


def float_pcm(wav: bytes, nan: bool = False) -> bytes:
    samples, rate = sf.read(io.BytesIO(wav), dtype="float32")
    assert rate == SAMPLE_RATE, rate
    samples = np.asarray(samples, dtype="<f4")
    if nan:
        samples = samples.copy()
        samples[100:200] = np.nan
    return samples.tobytes()


def send(handler, body: bytes, streamed: bool, cut: bool = False) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "audio/pcm")
    for key, value in AUDIO_HEADERS.items():
        handler.send_header(key, value)
    if not streamed and not cut:
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
        return
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    write_chunked(handler, body, 65_536, len(body) // 2 + 1 if cut else None)  # a cut lands inside a sample


def route(handler, method: str, path: str, raw: bytes) -> None:
    """Serve one non-control request on ``handler`` (the stand-in's request handler)."""
    if path not in ROUTES:
        raise detail(404, "Not Found")
    if method not in ROUTES[path]:
        raise detail(405, "Method Not Allowed")
    if path == "/v1":
        return handler._json(200, {"status": "ok"})
    if path == "/v1/models":
        return handler._json(200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model", "root": MODEL_ID,
                                                               "owned_by": "mini-sglang"}]})
    if path == "/tts/capabilities":
        return handler._json(200, capabilities())
    request = parse(handler.headers.get("Content-Type"), raw)
    fault = handler.server.faults.next() or {}
    kind = fault.get("kind")
    if kind == "reset":
        return handler._reset()
    if kind == "status":
        failure = detail(int(fault.get("code", 500)), fault.get("message", "injected fault"))
        if "retry_after" in fault:
            failure.headers["Retry-After"] = str(fault["retry_after"])
        raise failure
    if kind == "empty":
        return send(handler, b"", request["stream"])
    if kind == "not_wav":
        return send(handler, b"<html>upstream proxy error</html>", request["stream"])
    if handler.server.ignore_seed:
        request = {**request, "seed": None}
    wav = handler._synthesize(request, ignore_reference=kind == "ignore_reference", fault=fault)
    if handler.script is not None and kind not in ("nan", "truncate"):  # --stream-profile: chunks leave on the script
        return scripted_answer(handler, request["text"], float_pcm(wav), Layout(0, 4, SAMPLE_RATE), "audio/pcm",
                               AUDIO_HEADERS, "raw" if request["stream"] else None)
    return send(handler, float_pcm(wav, nan=kind == "nan"), request["stream"], cut=kind == "truncate")
