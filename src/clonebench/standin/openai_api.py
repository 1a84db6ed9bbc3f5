"""The OpenAI-compatible ``/v1/audio/speech`` contract (vLLM-Omni) as the stand-in enforces it
(shared notes, server_protocols.md section 3). JSON only; errors ``{"error": {message, type, param, code}}``;
``ref_audio`` must be a ``data:`` URI here (the stand-in fetches no URLs; raw base64 is rejected as by vLLM);
``ref_text`` is required with ``ref_audio``; ``max_new_tokens`` 1-4096; ``GET /health`` and ``GET /v1/models``.
"""

from __future__ import annotations

import base64
import binascii
import json

from clonebench.standin.fish_api import HTTPFailure, media_type

MODEL_ID = "fishaudio/s2-pro"
ROUTES = {"/health": ("GET",), "/v1/models": ("GET",), "/v1/audio/speech": ("POST",)}


def error(status: int, message: str, param: str | None = None) -> HTTPFailure:
    kind = {400: "BadRequestError", 404: "NotFoundError", 405: "MethodNotAllowed"}.get(status, "InternalServerError")
    body = {"error": {"message": message, "type": kind, "param": param, "code": status}}
    return HTTPFailure(status, message, raw=json.dumps(body).encode())


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
        raise error(400, "input must be a non-empty string", "input")
    if data.get("model") not in (None, MODEL_ID):
        raise error(404, f"The model `{data['model']}` does not exist.", "model")
    if data.get("response_format", "wav") not in ("wav", "pcm"):
        raise error(400, "the stand-in answers wav or pcm only", "response_format")
    tokens = data.get("max_new_tokens", 2048)
    if isinstance(tokens, bool) or not isinstance(tokens, int) or not 1 <= tokens <= 4096:
        raise error(400, "max_new_tokens must be an integer in 1..4096", "max_new_tokens")
    seed = data.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise error(400, "seed must be an integer", "seed")
    references = []
    ref_audio = data.get("ref_audio")
    if ref_audio is not None:
        if not isinstance(ref_audio, str) or not ref_audio.startswith("data:"):
            raise error(400, "ref_audio must be an http(s) URL, a data: URI or a file:// path; raw base64 is not "
                             "accepted (the stand-in fetches no URLs)", "ref_audio")
        if not data.get("ref_text"):
            raise error(400, "ref_text is required with ref_audio", "ref_text")
        try:
            audio = base64.b64decode(ref_audio.split(",", 1)[1], validate=True)
        except (IndexError, binascii.Error, ValueError):
            raise error(400, "ref_audio is not valid base64", "ref_audio") from None
        references = [{"audio": audio, "text": data["ref_text"]}]
    return {"text": text, "references": references, "seed": seed, "format": data.get("response_format", "wav"),
            "streaming": False, "voice": data.get("voice", "default")}


def models() -> bytes:
    return json.dumps({"object": "list", "data": [{"id": MODEL_ID, "object": "model", "owned_by": "stand-in"}]}).encode()
