"""Header-less PCM answers and multipart requests, shared by the servers that use them (CosyVoice, Zonos 2).

A header-less body says nothing about itself: its rate and sample format come from the adversary's config
(``sample_rate``, ``sample_format``), checked against what the server's code writes. Whatever cannot be whole
samples of that format (an empty body, an odd length, text, a WAV file) is refused, never saved as a clip;
float samples are range-checked (non-finite, or beyond 1 by more than ``FLOAT_TOLERANCE``).
"""

from __future__ import annotations

import hashlib
import io
import json

import numpy as np
import soundfile as sf

from clonebench.data.audio import InvalidAudio

SAMPLE_FORMATS = {"s16le": ("<i2", "PCM_16"), "f32le": ("<f4", "FLOAT")}
FLOAT_TOLERANCE = 1e-3   # float32 PCM beyond +-1 by more than this is a broken answer, not a loud clip
TEXT_STARTS = (b"{", b"[", b"<", b"Internal", b"Not Found", b"error", b"Error")


def _looks_like_text(body: bytes) -> bool:
    head = body[:64]
    return head.startswith(TEXT_STARTS) and all(32 <= b < 127 or b in (9, 10, 13) for b in head)


def pcm_to_wav(body: bytes, *, sample_rate: int, sample_format: str, server: str) -> bytes:
    """``body`` (mono header-less PCM at ``sample_rate`` Hz in ``sample_format``) as a WAV file.

    Raises InvalidAudio, with the reason, for a body that is not such PCM: the transport journals it as a failed
    attempt (``HTTP 200 but ...``)."""
    dtype, subtype = SAMPLE_FORMATS[sample_format]
    width = np.dtype(dtype).itemsize
    if not body:
        raise InvalidAudio(f"the body is empty: {server} sent a 200 and no audio (its model failed after the "
                           "response had started, which ends the stream without an error)")
    if body[:4] == b"RIFF" and body[8:12] == b"WAVE":
        raise InvalidAudio(f"the body is a WAV file, but {server} at the pinned commit sends header-less PCM: "
                           "the server is not the one this adversary speaks")
    if _looks_like_text(body):
        raise InvalidAudio(f"the body is text, not PCM: {body[:120].decode('ascii', 'replace')!r}")
    if len(body) % width:
        raise InvalidAudio(f"the body of {len(body)} bytes is not whole {sample_format} samples ({width} bytes "
                           "each): the stream was cut inside a sample")
    samples = np.frombuffer(body, dtype=dtype)
    if sample_format == "f32le":
        finite = np.isfinite(samples)
        if not finite.all():
            raise InvalidAudio(f"{int((~finite).sum())} of {samples.size} float32 samples are NaN or infinite")
        peak = float(np.max(np.abs(samples)))
        if peak > 1.0 + FLOAT_TOLERANCE:
            raise InvalidAudio(f"float32 samples reach {peak:.4g}, beyond [-1, 1] (tolerance {FLOAT_TOLERANCE:g}): "
                               "not PCM in the configured format (adversary.sample_format)")
        samples = np.clip(samples, -1.0, 1.0)
    out = io.BytesIO()
    sf.write(out, samples, sample_rate, subtype=subtype, format="WAV")
    return out.getvalue()


def fastapi_error(status: int, body: bytes) -> str | None:
    """A FastAPI server's error body, read: ``{"detail": "..."}`` (HTTPException), ``{"detail": [...]}`` (422
    request validation: each refused field), or a plain-text 500 (an unhandled exception: no detail)."""
    try:
        detail = json.loads(body).get("detail")
    except (ValueError, AttributeError, UnicodeDecodeError):
        text = body[:200].decode("utf-8", "replace").strip()
        if status >= 500 and text in ("Internal Server Error", ""):
            return "an unhandled exception in the server (plain 500, no detail; its log says which)"
        return None
    if isinstance(detail, str):
        return f"the server refused the request: {detail}"
    if isinstance(detail, list):
        fields = []
        for entry in detail[:8]:
            if isinstance(entry, dict):
                where = ".".join(str(x) for x in entry.get("loc", []) if x != "body") or "body"
                fields.append(f"{where}: {entry.get('msg', '?')}")
        return "FastAPI request validation (422): " + "; ".join(fields) if fields else None
    return None


def multipart_form(fields: list[tuple[str, str]], files: list[tuple[str, str, str, bytes]]) -> tuple[bytes, str]:
    """A multipart/form-data body and its Content-Type, with a boundary derived from the content (so the same
    request always has the same bytes and a retry resends them exactly); ``files`` are (name, filename, type, data)."""
    digest = hashlib.sha256()
    for name, value in fields:
        digest.update(b"F" + name.encode() + b"\0" + value.encode("utf-8") + b"\0")
    for name, filename, content_type, data in files:
        digest.update(b"B" + name.encode() + b"\0" + filename.encode() + b"\0" + content_type.encode() + b"\0" + data)
    seed = digest.hexdigest()
    while True:
        boundary = "clonebench-" + seed[:32]
        marker = b"--" + boundary.encode()
        if not any(marker in value.encode("utf-8") for _, value in fields) and \
                not any(marker in data for *_, data in files):
            break
        seed = hashlib.sha256(seed.encode()).hexdigest()  # deterministic: the next boundary to try
    parts = []
    for name, value in fields:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
                     + value.encode("utf-8") + b"\r\n")
    for name, filename, content_type, data in files:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                     f"Content-Type: {content_type}\r\n\r\n".encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"
