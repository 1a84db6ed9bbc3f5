"""The Fish api_server ``/v1/tts`` contract as the stand-in enforces it (shared notes, server_protocols.md section 1).

Parses the body by content type, validates it like ``ServeTTSRequest`` (pydantic 2: strict floats,
lax ints, 422 with pydantic's error list), and decodes references the way Fish does (JSON strings
longer than 255 characters are base64-decoded, anything else is kept as the string's UTF-8 bytes).
"""

from __future__ import annotations

import base64
import binascii
import email.parser
import email.policy
import json
import re
from pathlib import Path

import ormsgpack

MEDIA_TYPES = ("application/json", "application/msgpack", "multipart/form-data")
REFERENCE_ID = re.compile(r"^[a-zA-Z0-9\-_ ]+$")
DEFAULTS = {"chunk_length": 200, "format": "wav", "latency": "normal", "references": [], "reference_id": None,
            "seed": None, "use_memory_cache": "off", "normalize": True, "streaming": False, "max_new_tokens": 1024,
            "top_p": 0.8, "repetition_penalty": 1.1, "temperature": 0.8}
STRICT_FLOATS = {"top_p": (0.1, 1.0), "repetition_penalty": (0.9, 2.0), "temperature": (0.1, 1.0)}
CHOICES = {"format": ("wav", "pcm", "mp3", "opus"), "latency": ("normal", "balanced"), "use_memory_cache": ("on", "off")}


class HTTPFailure(Exception):
    """An HTTP error answer. ``raw`` (bytes, with ``content_type``) is sent as is; otherwise a 422 sends ``body``
    as JSON (pydantic's list) and anything else Fish's envelope."""

    def __init__(self, status: int, message: str | None = None, body: object = None, headers: dict | None = None,
                 raw: bytes | None = None, content_type: str = "application/json"):
        super().__init__(message)
        self.status, self.message, self.body, self.headers = status, message, body, headers or {}
        self.raw, self.content_type = raw, content_type


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";")[0].strip().lower()


def parse_body(content_type: str | None, raw: bytes) -> dict:
    kind = media_type(content_type)
    if kind not in MEDIA_TYPES:
        raise HTTPFailure(415, f"Unsupported Media Type: {content_type}", headers={"Accept": ", ".join(MEDIA_TYPES)})
    if kind == "application/json":
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise HTTPFailure(400, f"Invalid JSON: {exc}") from exc
    elif kind == "application/msgpack":
        try:
            data = ormsgpack.unpackb(raw)
        except (ormsgpack.MsgpackDecodeError, ValueError) as exc:
            raise HTTPFailure(500, f"Invalid msgpack: {exc}") from exc
    else:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
        data = {part.get_param("name", header="content-disposition"): part.get_content()
                for part in message.iter_parts()}
    if not isinstance(data, dict):
        raise HTTPFailure(422, body=[{"type": "model_type", "loc": [], "msg": "Input should be an object",
                                      "input": data}])
    return data


def _audio_bytes(value) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, str):
        if len(value) > 255:
            try:
                return base64.b64decode(value, validate=False)
            except (binascii.Error, ValueError):
                pass
        return value.encode("utf-8")
    raise TypeError


def validate_tts(data: dict) -> dict:
    """A normalised request dict, or HTTPFailure(422) listing every invalid field like pydantic."""
    errors, out = [], dict(DEFAULTS)

    def error(kind: str, loc: list, msg: str, value) -> None:
        errors.append({"type": kind, "loc": ["body", *loc], "msg": msg, "input": value if not isinstance(value, bytes) else "<bytes>"})

    if not isinstance(data.get("text"), str):
        error("missing" if "text" not in data else "string_type", ["text"], "Field required" if "text" not in data
              else "Input should be a valid string", data.get("text"))
    else:
        out["text"] = data["text"]
    for name, (lo, hi) in STRICT_FLOATS.items():
        if name in data:
            value = data[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                error("float_type", [name], "Input should be a valid number", value)
            elif not lo <= value <= hi:
                error("less_than_equal" if value > hi else "greater_than_equal", [name],
                      f"Input should be between {lo} and {hi}", value)
            else:
                out[name] = float(value)
    for name in ("chunk_length", "max_new_tokens", "seed"):
        if name in data and not (name == "seed" and data[name] is None):
            value = data[name]
            try:
                if isinstance(value, bool) or isinstance(value, float) and not value.is_integer():
                    raise ValueError
                out[name] = int(value)
            except (TypeError, ValueError):
                error("int_parsing", [name], "Input should be a valid integer", value)
    for name, choices in CHOICES.items():
        if name in data:
            if data[name] not in choices:
                error("literal_error", [name], f"Input should be one of {choices}", data[name])
            else:
                out[name] = data[name]
    for name in ("normalize", "streaming"):
        if name in data:
            if not isinstance(data[name], bool):
                error("bool_type", [name], "Input should be a valid boolean", data[name])
            else:
                out[name] = data[name]
    if data.get("reference_id") is not None:
        if not isinstance(data["reference_id"], str):
            error("string_type", ["reference_id"], "Input should be a valid string", data["reference_id"])
        else:
            out["reference_id"] = data["reference_id"]
    references = data.get("references", [])
    if not isinstance(references, list):
        error("list_type", ["references"], "Input should be a valid list", references)
        references = []
    out["references"] = []
    for index, ref in enumerate(references):
        if not isinstance(ref, dict) or "audio" not in ref or not isinstance(ref.get("text"), str):
            error("missing", ["references", index], "Field required: audio and text", ref)
            continue
        try:
            out["references"].append({"audio": _audio_bytes(ref["audio"]), "text": ref["text"]})
        except TypeError:
            error("bytes_type", ["references", index, "audio"], "Input should be a valid bytes", ref["audio"])
    if errors:
        raise HTTPFailure(422, body=errors)
    if out["streaming"] and out["format"] != "wav":
        raise HTTPFailure(400, "Streaming only supports WAV format")
    return out


def reference_id_valid(reference_id: str) -> bool:
    return bool(REFERENCE_ID.match(reference_id)) and len(reference_id) <= 255


AUDIO_EXTENSIONS = (".mp3", ".wav", ".flac", ".ogg", ".m4a", ".wma", ".aac", ".aiff", ".aif", ".aifc")


def stored_references(references_dir: Path | None, reference_id: str) -> list[dict]:
    """Fish's reference_id lookup: a valid but unknown id silently means no reference (and an empty folder)."""
    if not reference_id_valid(reference_id):
        raise HTTPFailure(500, "Failed to generate speech")
    if references_dir is None:
        return []
    folder = references_dir / reference_id
    folder.mkdir(parents=True, exist_ok=True)
    found = []
    for audio in sorted(p for p in folder.rglob("*") if p.suffix.lower() in AUDIO_EXTENSIONS):
        lab = audio.with_suffix(".lab")
        found.append({"audio": audio.read_bytes(), "text": lab.read_text() if lab.exists() else str(lab)})
    return found
