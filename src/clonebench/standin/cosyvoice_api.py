"""The CosyVoice 2/3 FastAPI server (``runtime/python/fastapi/server.py``) as the stand-in emulates it, written
from FunAudioLLM/CosyVoice ace7c47f41bbd303aa6bf1ea80e6f9fbd595cd40 (2026-03-16):

- ``GET|POST /inference_zero_shot``: multipart form ``tts_text``, ``prompt_text`` (``Form()``) and the file
  ``prompt_wav`` (``File()``), all required: a missing one (or a body that is no form) is FastAPI's 422
  ``{"detail": [{"type": "missing", "loc": ["body", name], "msg": "Field required", ...}]}``; a ``prompt_wav``
  sent as a plain field is a 422 too. The other routes (sft, cross-lingual, instruct) are not emulated (404);
- ``load_wav(prompt_wav.file, 16000)`` runs before the response: audio soundfile cannot decode, or a rate below
  16 kHz (an AssertionError), is a plain ``500 Internal Server Error`` (text/plain, no detail), as Starlette
  answers an unhandled exception;
- success: ``StreamingResponse``: raw int16 PCM, no header, **no Content-Type**, chunked, at ``SAMPLE_RATE``
  (CosyVoice 2's 24 kHz). No seed: every answer differs (unseeded dither);
- a prompt over 30 s fails inside the stream (``_extract_speech_token``'s assert): 200, then the connection closes
  with the body cut short. The fault ``empty`` answers 200 with an empty body (upstream issue #1805: at this head
  every zero-shot request does); ``model_error`` answers 200 and breaks the chunked stream before its first byte
  (what upstream's app sends when the model raises); ``truncate`` cuts the stream; ``status``, ``reset``, ``not_wav``,
  ``ignore_reference`` as for every protocol;
- ``GET /openapi.json``: FastAPI's schema (the adapter's readiness probe: the real server loads its model first).
"""

from __future__ import annotations

import email.parser
import email.policy
import io
import json
import urllib.parse

import numpy as np
import soundfile as sf
from scipy.signal import resample_poly

from clonebench.standin.chunked import write_chunked
from clonebench.standin.stream_profile import Layout, scripted_answer
from clonebench.standin.fish_api import HTTPFailure, media_type

UPSTREAM_COMMIT = "ace7c47f41bbd303aa6bf1ea80e6f9fbd595cd40"
SAMPLE_RATE = 24_000
MIN_PROMPT_RATE = 16_000
MAX_PROMPT_S = 30.0
FIELDS = ("tts_text", "prompt_text", "prompt_wav")
UPSTREAM_ROUTES = ("/inference_sft", "/inference_zero_shot", "/inference_cross_lingual", "/inference_instruct",
                   "/inference_instruct2")
ROUTES = {"/inference_zero_shot": ("GET", "POST"), "/openapi.json": ("GET",)}


def detail(status: int, message) -> HTTPFailure:
    return HTTPFailure(status, str(message), raw=json.dumps({"detail": message}).encode())


def plain_500() -> HTTPFailure:
    return HTTPFailure(500, "Internal Server Error", raw=b"Internal Server Error", content_type="text/plain; charset=utf-8")


def openapi() -> dict:
    operation = {"responses": {"200": {"description": "Successful Response"}}}
    return {"openapi": "3.1.0", "info": {"title": "FastAPI", "version": "0.1.0"},
            "paths": {path: {"get": operation, "post": operation} for path in UPSTREAM_ROUTES}}


def form(content_type: str | None, raw: bytes) -> dict[str, tuple[bytes, str | None]]:
    """{name: (payload bytes, filename or None)} of a multipart or url-encoded form (FastAPI reads both for
    ``Form()``); {} for any other body."""
    if media_type(content_type) == "application/x-www-form-urlencoded":
        return {name: (value.encode("utf-8"), None) for name, value in urllib.parse.parse_qsl(raw.decode("latin-1"))}
    if media_type(content_type) != "multipart/form-data" or not raw:
        return {}
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    if not message.is_multipart():
        return {}
    return {part.get_param("name", header="content-disposition"): (part.get_payload(decode=True) or b"",
                                                                    part.get_filename())
            for part in message.iter_parts()}


def parse(content_type: str | None, raw: bytes) -> dict:
    fields = form(content_type, raw)
    missing = [{"type": "missing", "loc": ["body", name], "msg": "Field required", "input": None}
               for name in FIELDS if name not in fields]
    if missing:
        raise detail(422, missing)
    if fields["prompt_wav"][1] is None:
        raise detail(422, [{"type": "value_error", "loc": ["body", "prompt_wav"],
                            "msg": "Value error, Expected UploadFile, received: <class 'str'>", "input": "..."}])
    audio = fields["prompt_wav"][0]
    try:
        info = sf.info(io.BytesIO(audio))
    except (RuntimeError, sf.LibsndfileError, ValueError):
        raise plain_500() from None  # torchaudio.load(backend='soundfile') raises: an unhandled exception
    if info.samplerate != MIN_PROMPT_RATE and info.samplerate < MIN_PROMPT_RATE:
        raise plain_500()  # load_wav: assert sample_rate >= min_sr
    return {"text": fields["tts_text"][0].decode("utf-8"), "seed": None,
            "references": [{"audio": audio, "text": fields["prompt_text"][0].decode("utf-8")}],
            "too_long": info.duration > MAX_PROMPT_S}


def pcm(wav: bytes) -> bytes:
    """The stand-in's 44.1 kHz WAV as CosyVoice's answer: int16 PCM at SAMPLE_RATE, no header."""
    samples, rate = sf.read(io.BytesIO(wav), dtype="float32")
    resampled = resample_poly(samples, SAMPLE_RATE, rate) if rate != SAMPLE_RATE else samples
    return (np.clip(resampled, -1.0, 32767 / 32768) * 2 ** 15).astype("<i2").tobytes()


def stream(handler, body: bytes, cut: bool = False) -> None:
    """200, no Content-Type, chunked; ``cut``: close after half the body, without the last chunk."""
    handler.send_response(200)
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    write_chunked(handler, body, 48_000, len(body) // 2 if cut else None)


def route(handler, method: str, path: str, raw: bytes) -> None:
    """Serve one non-control request on ``handler`` (the stand-in's request handler)."""
    if path not in ROUTES:
        raise detail(404, "Not Found")
    if method not in ROUTES[path]:
        raise detail(405, "Method Not Allowed")
    if path == "/openapi.json":
        return handler._json(200, openapi())
    request = parse(handler.headers.get("Content-Type"), raw)
    fault = handler.server.faults.next() or {}
    kind = fault.get("kind")
    if kind == "reset":
        return handler._reset()
    if kind == "status":
        code = int(fault.get("code", 500))
        failure = plain_500() if code == 500 and "message" not in fault else detail(code, fault.get("message", "fault"))
        failure.status = code
        if "retry_after" in fault:
            failure.headers["Retry-After"] = str(fault["retry_after"])
        raise failure
    if kind == "empty":
        return stream(handler, b"")
    if kind == "model_error":  # what the real app sends when the model raises at once: 200, then a broken stream
        return stream(handler, b"", cut=True)
    if kind == "not_wav":
        return stream(handler, b"<html>upstream proxy error</html>")
    if request["too_long"]:  # the speech tokenizer's assert, raised inside the stream
        return stream(handler, b"", cut=True)
    audio = pcm(handler._synthesize(request, ignore_reference=kind == "ignore_reference", fault=fault))
    if handler.script is not None and kind != "truncate":  # --stream-profile: chunks leave on the script
        return scripted_answer(handler, request["text"], audio, Layout(0, 2, SAMPLE_RATE), None, {}, "raw")
    return stream(handler, audio, cut=kind == "truncate")
