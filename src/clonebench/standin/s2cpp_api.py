"""The s2.cpp ``POST /generate`` contract as the stand-in enforces it (shared notes, server_protocols.md section 2).

Multipart only; ``text`` must be a plain field (empty text is accepted); the reference is a file part (aliases reference_audio,
prompt_audio, ref_audio) and needs a transcript (aliases ref_text, prompt_text); ``params`` is a JSON object
as a string, type-checked like s2.cpp's nlohmann::json reads. Errors: 400 JSON ``{"error": ...}`` (missing text,
``JSON parse error``, ``Params JSON must be an object``, ``Invalid params JSON: ...``), 400 text/plain (reference
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

# params keys s2.cpp reads, by the nlohmann::json get<> type (rodrigomatta/s2.cpp 2c33261, src/s2_server.cpp)
PARAM_TYPES = {**dict.fromkeys(("max_new_tokens", "top_k", "min_tokens_before_end", "n_threads", "segment_max_chars",
                                "sentence_pause_ms", "stream_decode_stride", "stream_decode_stride_frames",
                                "stream_holdback_frames", "stream_start_buffer_ms", "codec_context_frames",
                                "codec_decode_context_frames"), "number"),
               **dict.fromkeys(("temperature", "top_p"), "number"),
               **dict.fromkeys(("stream", "chunked", "realtime", "segment_sentences", "low_latency", "verbose",
                                "codec_follow_backend", "codec_auto_backend"), "boolean"),
               **dict.fromkeys(("output_format", "voice", "voice_id", "voice_dir"), "string")}
JSON_TYPE_NAMES = {type(None): "null", bool: "boolean", int: "number", float: "number", str: "string",
                   list: "array", dict: "object"}
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
    if text is None or text[1] is not None:  # a plain field; empty text is accepted (and synthesized)
        raise json_error(400, "No text field in multipart form")
    params = {}
    if "params" in fields:
        params = check_params(fields["params"][0])
    reference = next((fields[n] for n in REFERENCE_NAMES if n in fields and fields[n][1]), None)
    if reference is not None and not reference[0]:
        reference = None  # an empty file part is no reference
    transcript = next((fields[n][0] for n in TRANSCRIPT_NAMES if n in fields), None)
    references = []
    if reference is not None:
        if not transcript:
            raise text_error(400, "Reference audio requires reference_text (aliases: ref_text, prompt_text).")
        references = [{"audio": reference[0], "text": str(transcript)}]
    return {"text": str(text[0]), "references": references, "seed": None, "format": "wav", "streaming": False,
            "params": params, "ignore_bad_reference": True}


def check_params(raw) -> dict:
    """``params`` as s2.cpp reads it: a JSON object whose known keys have nlohmann's types (ints and floats are both
    "number"); an unknown key is ignored, a wrong type is 400 ``Invalid params JSON: ...``."""
    try:
        params = json.loads(raw)
    except (json.JSONDecodeError, TypeError, UnicodeDecodeError):
        raise json_error(400, "JSON parse error") from None
    if not isinstance(params, dict):
        raise json_error(400, "Params JSON must be an object")
    for key, expected in PARAM_TYPES.items():
        if key in params:
            actual = JSON_TYPE_NAMES.get(type(params[key]), "object")
            if actual != expected:
                raise json_error(400, f"Invalid params JSON: [json.exception.type_error.302] type must be {expected}, "
                                      f"but is {actual}")
    return params


def float_wav(pcm16_wav: bytes) -> bytes:
    samples, rate = sf.read(io.BytesIO(pcm16_wav), dtype="float32")
    out = io.BytesIO()
    sf.write(out, samples.astype(np.float32), rate, subtype="FLOAT", format="WAV")
    return out.getvalue()
