"""The s2.cpp ``POST /generate`` contract as the stand-in enforces it (shared notes, server_protocols.md section 2).

Multipart only; ``text`` must be a plain field; the reference is a file part (aliases reference_audio,
prompt_audio, ref_audio) and needs a transcript (aliases ref_text, prompt_text); ``params`` is a JSON object
as a string. Errors: 400 JSON ``{"error": ...}`` (missing text, bad params), 400 text/plain (reference
without transcript), 503 text/plain while busy, 413 above 100 MB. Reference audio that cannot be decoded
is ignored (uncloned voice, 200). Success: a 32-bit float WAV with Content-Length.
"""

from __future__ import annotations

import email.parser
import email.policy
import io
import json

import numpy as np
import soundfile as sf

from clonebench.standin.fish_api import HTTPFailure, media_type

REFERENCE_NAMES = ("reference", "reference_audio", "prompt_audio", "ref_audio")
TRANSCRIPT_NAMES = ("reference_text", "ref_text", "prompt_text")
MAX_BODY = 100 * 1024 * 1024
ROUTES = {"/generate": ("POST",)}


def text_error(status: int, message: str) -> HTTPFailure:
    return HTTPFailure(status, message, raw=message.encode(), content_type="text/plain")


def json_error(status: int, message: str) -> HTTPFailure:
    return HTTPFailure(status, message, raw=json.dumps({"error": message}).encode())


def not_found() -> HTTPFailure:
    return HTTPFailure(404, None, raw=b"", content_type="text/plain")


def parts(content_type: str | None, raw: bytes) -> dict[str, tuple[bytes | str, str | None]]:
    if media_type(content_type) != "multipart/form-data":
        raise json_error(400, "expected multipart/form-data")
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    out = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        filename = part.get_filename()
        out[name] = (part.get_payload(decode=True) if filename else part.get_content(), filename)
    return out


def parse(content_type: str | None, raw: bytes) -> dict:
    if len(raw) > MAX_BODY:
        raise text_error(413, "Payload Too Large")
    fields = parts(content_type, raw)
    text = fields.get("text")
    if text is None or text[1] is not None or not str(text[0]).strip():
        raise json_error(400, "missing 'text' field")
    params = {}
    if "params" in fields:
        try:
            params = json.loads(fields["params"][0])
        except (json.JSONDecodeError, TypeError):
            raise json_error(400, "params must be a JSON object") from None
        if not isinstance(params, dict):
            raise json_error(400, "params must be a JSON object")
    reference = next((fields[n] for n in REFERENCE_NAMES if n in fields and fields[n][1]), None)
    transcript = next((fields[n][0] for n in TRANSCRIPT_NAMES if n in fields), None)
    references = []
    if reference is not None:
        if not transcript:
            raise text_error(400, "reference_text is required when a reference is given")
        references = [{"audio": reference[0], "text": str(transcript)}]
    return {"text": str(text[0]), "references": references, "seed": None, "format": "wav", "streaming": False,
            "params": params, "ignore_bad_reference": True}


def float_wav(pcm16_wav: bytes) -> bytes:
    samples, rate = sf.read(io.BytesIO(pcm16_wav), dtype="float32")
    out = io.BytesIO()
    sf.write(out, samples.astype(np.float32), rate, subtype="FLOAT", format="WAV")
    return out.getvalue()
