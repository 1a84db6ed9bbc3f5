"""SGLang-Omni's speech server (``sgl-omni serve`` with the S2-Pro pipeline) as the stand-in emulates it, written from
sgl-project/sglang-omni 2489a10eecb91bbd1bdbe8b511b0bdf23d341f3f (``sglang_omni/serve/openai_api.py``,
``serve/protocol.py``, ``client/audio.py``, ``models/fishaudio_s2_pro/pipeline/stages.py``; not copied):

- ``POST /v1/audio/speech``: JSON ``CreateSpeechRequest`` (pydantic: unknown fields ignored; a body that is not a
  JSON object, a missing ``input`` or a wrongly typed field is FastAPI's 422 ``{"detail": [...]}``). References:
  ``references[]`` then ``ref_audio`` / ``ref_text`` (appended), each ``audio_path`` a server-local path or an
  http(s) URL; the pipeline opens it, and any failure (a path that does not exist, audio it cannot read, a URL: the
  stand-in fetches none) is 500 ``{"detail": "<the exception>"}``. The stand-in reads references only inside its
  share folder (``references_dir``): any other path fails as missing. ``seed`` is accepted and ignored (the S2-Pro
  pipeline never reads it). Answers at 44.1 kHz: ``wav`` an int16 WAV, ``pcm`` bare s16le, ``flac`` FLAC, an
  unknown format a WAV (mp3/opus/aac need pydub: not emulated, a WAV here too); ``stream`` SSE events
  (``audio.speech.chunk`` with base64 audio, each chunk encoded alone, a final event with ``finish_reason``, then
  ``[DONE]``), half-second chunks, or one event per chunk of the ``--stream-profile`` script;
- ``GET /health`` 200 ``{"status": "healthy", ...}``, ``GET /v1/models``; other paths are 404 ``{"detail":
  "Not Found"}``, a wrong method 405;
- faults: ``status`` (``{"detail": message}`` with its code), ``reset``, ``delay``, ``empty`` (200, no audio),
  ``ignore_reference``.
"""

from __future__ import annotations

import base64
import io
import json
import os
import time
import uuid
from pathlib import Path

import numpy as np
import soundfile as sf

from clonebench.core.untrusted import UntrustedFileError, read_bytes
from clonebench.standin.fish_api import HTTPFailure
from clonebench.standin.stream_profile import Layout, scripted_answer

UPSTREAM_COMMIT = "2489a10eecb91bbd1bdbe8b511b0bdf23d341f3f"
RATE = 44_100
MODEL = "fishaudio/s2-pro"
MAX_REFERENCE_BYTES = 64 << 20
ROUTES = {"/v1/audio/speech": ("POST",), "/health": ("GET",), "/v1/models": ("GET",),
          "/v1/chat/completions": ("POST",)}
# CreateSpeechRequest's typed fields the stand-in checks (name -> accepted JSON types)
TYPES = {"input": (str,), "model": (str, type(None)), "voice": (str,), "response_format": (str,),
         "speed": (int, float), "stream": (bool,), "task_type": (str, type(None)), "language": (str, type(None)),
         "ref_audio": (str, type(None)), "ref_text": (str, type(None)), "references": (list, type(None)),
         "temperature": (int, float, type(None)), "top_p": (int, float, type(None)), "top_k": (int, type(None)),
         "repetition_penalty": (int, float, type(None)), "max_new_tokens": (int, type(None)),
         "seed": (int, type(None))}


def detail(status: int, message) -> HTTPFailure:
    return HTTPFailure(status, str(message), raw=json.dumps({"detail": message}).encode())


def invalid(kind: str, loc: list, msg: str, value=None) -> HTTPFailure:
    return detail(422, [{"type": kind, "loc": ["body", *loc], "msg": msg, "input": value}])


def parse(body: bytes) -> dict:
    try:
        req = json.loads(body) if body else None
    except ValueError:
        raise invalid("json_invalid", [0], "JSON decode error") from None
    if not isinstance(req, dict):
        raise invalid("model_attributes_type", [], "Input should be a valid dictionary or object to extract fields "
                      "from", req)
    if "input" not in req:
        raise invalid("missing", ["input"], "Field required", req)
    for name, types in TYPES.items():
        value = req.get(name)
        if name in req and (not isinstance(value, types) or (isinstance(value, bool) and bool not in types)):
            raise invalid("type_error", [name], f"Input should be of type {types[0].__name__}", value)
    for index, ref in enumerate(req.get("references") or []):
        if not isinstance(ref, dict):
            raise invalid("model_type", ["references", index], "Input should be a valid dictionary", ref)
        for name in ("audio_path", "text"):
            if not isinstance(ref.get(name), (str, type(None))):
                raise invalid("string_type", ["references", index, name], "Input should be a valid string",
                              ref.get(name))
    return req


def references(req: dict) -> list[dict]:
    refs = [dict(r) for r in req.get("references") or []]
    if req.get("ref_audio") is not None:
        refs.append({"audio_path": req["ref_audio"], **({"text": req["ref_text"]} if req.get("ref_text") else {})})
    return refs


def load_reference(path: str, share: Path | None) -> bytes:
    if path.startswith(("http://", "https://")):
        raise detail(500, f"stand-in: fetching reference URLs is not emulated ({path})")
    missing = detail(500, f"Failed to open the audio file {path!r}: No such file or directory")
    if share is None or not os.path.exists(path):
        raise missing
    try:
        audio = read_bytes(path, max_bytes=MAX_REFERENCE_BYTES, within=share, what="reference")
        sf.info(io.BytesIO(audio))
    except UntrustedFileError:
        raise missing from None
    except Exception as exc:  # noqa: BLE001 - whatever torchaudio.load would raise on it
        raise detail(500, f"Failed to decode the audio file {path!r}: {exc}") from None
    return audio


def encode(pcm: np.ndarray, fmt: str) -> tuple[bytes, str]:
    if fmt == "pcm":
        return pcm.tobytes(), "audio/pcm"
    out = io.BytesIO()
    if fmt == "flac":
        sf.write(out, pcm, RATE, format="FLAC", subtype="PCM_16")
        return out.getvalue(), "audio/flac"
    sf.write(out, pcm, RATE, format="WAV", subtype="PCM_16")
    return out.getvalue(), "audio/wav"


class Events:
    """One answer's SSE events (``_speech_stream``): each piece of 16-bit PCM an ``audio.speech.chunk`` encoded alone
    in the request's format; the last piece followed by the event with ``finish_reason`` and ``data: [DONE]``.
    Called as ``(piece, last)``: the framing of a scripted answer (``stream_profile.scripted_answer``)."""

    def __init__(self, fmt: str):
        self.fmt, self.index, self.request_id = fmt, 0, f"speech-speech-{uuid.uuid4()}"

    def __call__(self, piece: bytes, last: bool) -> bytes:
        events = []
        if piece:
            data, mime = encode(np.frombuffer(piece, dtype="<i2"), self.fmt)
            events.append({"id": self.request_id, "object": "audio.speech.chunk", "index": self.index,
                           "audio": {"data": base64.b64encode(data).decode("ascii"), "format": mime.split("/")[1],
                                     "mime_type": mime, "sample_rate": RATE}, "finish_reason": None})
            self.index += 1
        if last:
            events.append({"id": self.request_id, "object": "audio.speech.chunk", "index": self.index, "audio": None,
                           "finish_reason": "stop", "usage": None})
        out = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events)
        return out + (b"data: [DONE]\n\n" if last else b"")


def sse(pcm: np.ndarray, fmt: str) -> bytes:
    """A whole streamed answer: half-second chunks."""
    raw, step, events = pcm.tobytes(), RATE, Events(fmt)  # RATE samples of 2 bytes: half a second
    pieces = [raw[i:i + step] for i in range(0, len(raw), step)] or [b""]
    return b"".join(events(piece, i == len(pieces) - 1) for i, piece in enumerate(pieces))


def route(handler, method: str, path: str, body: bytes) -> None:
    """Serve one request of the SGLang-Omni protocol on the stand-in's ``handler``."""
    if path not in ROUTES:
        raise detail(404, "Not Found")
    if method not in ROUTES[path]:
        raise detail(405, "Method Not Allowed")
    if path == "/health":
        return handler._json(200, {"status": "healthy", "running": True})
    if path == "/v1/models":
        return handler._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model",
                                                               "owned_by": "sglang-omni"}]})
    if path != "/v1/audio/speech":
        raise detail(500, "not emulated by the stand-in")
    req = parse(body)
    fault = handler.server.faults.next() or {}
    kind = fault.get("kind")
    if kind == "reset":
        return handler._reset()
    if kind == "delay":
        time.sleep(float(fault.get("seconds", 1.0)))
    if kind == "status":
        raise detail(int(fault.get("code", 500)), fault.get("message", "stand-in fault"))
    refs = [{"audio": load_reference(r["audio_path"], handler.server.references_dir), "text": r.get("text") or ""}
            for r in references(req) if r.get("audio_path")]
    fmt = req.get("response_format", "wav").lower().strip()
    if kind == "empty":
        return handler._send(200, b"", "audio/pcm" if fmt == "pcm" else "audio/wav")
    request = {"text": req["input"], "seed": None, "format": "wav", "references": refs}  # S2-Pro: no seed read
    wav = handler._synthesize(request, ignore_reference=kind == "ignore_reference", fault=fault)
    samples, rate = sf.read(io.BytesIO(wav), dtype="int16")
    if rate != RATE:
        raise detail(500, f"stand-in voice at {rate} Hz, not {RATE}")
    if req.get("stream") and handler.script is not None:  # --stream-profile: each chunk an event, on the script
        return scripted_answer(handler, req["input"], samples.tobytes(), Layout(0, 2, RATE), "text/event-stream", {},
                               Events(fmt))
    if req.get("stream"):
        return handler._send(200, sse(samples, fmt), "text/event-stream", chunked=True)
    data, mime = encode(samples, fmt)
    handler._send(200, data, mime, {"Content-Disposition": f'attachment; filename="speech.{mime.split("/")[1]}"'})
