"""GPT-SoVITS ``api_v2.py`` as the stand-in emulates it, written from RVC-Boss/GPT-SoVITS
48b1a0169a28582a8984402f82cf438d3bfa6aca (``api_v2.py``, ``GPT_SoVITS/TTS_infer_pack/TTS.py``; not copied).

``POST /tts`` JSON (``TTS_Request``; pydantic: a body that is not a JSON object is a 422 ``{"detail": [...]}``).
``check_params`` in its order, each a 400 ``{"message": ...}``: ``ref_audio_path``, ``text``, ``text_lang`` (required,
and ``.lower()`` among the v2 languages), ``prompt_lang`` (likewise), ``media_type`` (wav raw ogg aac; ogg and aac
are not emulated: 400 here), ``text_split_method``; ``streaming_mode`` must be a bool or 0-3. Then the pipeline: a
``text_lang`` not in lower case fails its assert, a ``ref_audio_path`` that does not exist is ``"<path> not
exists"`` and a reference outside 3-10 s fails, each as 400 ``{"message": "tts failed", "Exception": ...}``. The
stand-in reads references only inside its share folder (``references_dir``): any other path is "not exists".

Answers at 32 kHz (a v2 model): ``media_type`` wav a whole WAV, raw bare s16le; in streaming modes 1-3 the body is
chunked, and with wav its first chunk is a WAV header with no frames (data size 0), then PCM. ``seed`` -1 draws a
random seed. There is no health route; GET ``/tts`` without a language fails inside the handler (500 here).
"""

from __future__ import annotations

import io
import json
import os
import socket
import time
import wave
from pathlib import Path

import numpy as np
import soundfile as sf

from clonebench.core.untrusted import UntrustedFileError, read_bytes
from clonebench.standin.fish_api import HTTPFailure
from clonebench.standin.stream_profile import Layout, scripted_answer

ROUTES = {"/tts": ("GET", "POST"), "/control": ("GET", "POST"), "/set_gpt_weights": ("GET",),
          "/set_sovits_weights": ("GET",), "/set_refer_audio": ("GET",)}
LANGUAGES = ("auto", "auto_yue", "en", "zh", "ja", "yue", "ko", "all_zh", "all_ja", "all_yue", "all_ko")
SPLIT_METHODS = ("cut0", "cut1", "cut2", "cut3", "cut4", "cut5")
RATE = 32_000
MAX_REFERENCE_BYTES = 64 << 20
REF_MIN_S, REF_MAX_S = 3.0, 10.0  # TTS._set_ref_audio_path (tests lower the minimum for the 2-3 s demo clips)


def message(status: int, text: str, exception: str | None = None) -> HTTPFailure:
    body = {"message": text, **({"Exception": exception} if exception is not None else {})}
    return HTTPFailure(status, text, raw=json.dumps(body).encode())


def check_params(req: dict) -> None:
    if req.get("ref_audio_path") in (None, ""):
        raise message(400, "ref_audio_path is required")
    if req.get("text") in (None, ""):
        raise message(400, "text is required")
    for key in ("text_lang", "prompt_lang"):
        value = req.get(key)
        if value in (None, ""):
            raise message(400, f"{key} is required")
        if not isinstance(value, str) or value.lower() not in LANGUAGES:
            raise message(400, f"{key}: {value} is not supported in version v2")
    if req.get("media_type", "wav") not in ("wav", "raw"):
        raise message(400, f"media_type: {req.get('media_type')} is not supported")
    if req.get("text_split_method", "cut5") not in SPLIT_METHODS:
        raise message(400, f"text_split_method:{req.get('text_split_method')} is not supported")
    if req.get("streaming_mode", False) not in (False, True, 0, 1, 2, 3):
        raise message(400, "the value of streaming_mode must be 0, 1, 2, 3(int) or true/false(bool)")


def header_without_frames(rate: int = RATE) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:  # as api_v2's wave_header_chunk: no frames, so the data size stays 0
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"")
    return out.getvalue()


def at_rate(wav: bytes, rate: int = RATE) -> np.ndarray:
    samples, source = sf.read(io.BytesIO(wav), dtype="float32")
    if samples.ndim > 1:
        samples = samples.mean(axis=1)
    n = round(len(samples) * rate / source)
    resampled = np.interp(np.arange(n) * source / rate, np.arange(len(samples)), samples)
    return (np.clip(resampled, -1.0, 1.0) * 32767).astype("<i2")


def reference(req: dict, share: Path | None) -> bytes:
    path = req["ref_audio_path"]
    if share is None or not os.path.exists(path):
        raise message(400, "tts failed", f"{path} not exists")
    try:
        audio = read_bytes(path, max_bytes=MAX_REFERENCE_BYTES, within=share, what="reference")
    except UntrustedFileError:
        raise message(400, "tts failed", f"{path} not exists") from None
    try:
        info = sf.info(io.BytesIO(audio))
    except Exception as exc:  # noqa: BLE001 - whatever librosa.load would raise on it
        raise message(400, "tts failed", f"Error opening {path!r}: {exc}") from None
    if not REF_MIN_S <= info.duration <= REF_MAX_S:
        raise message(400, "tts failed", "参考音频在3~10秒范围外，请更换！")
    return audio


def route(handler, method: str, path: str, body: bytes) -> None:
    """Serve one request of the GPT-SoVITS protocol on the stand-in's ``handler``."""
    if path not in ROUTES:
        raise HTTPFailure(404, raw=json.dumps({"detail": "Not Found"}).encode())
    if method not in ROUTES[path]:
        raise HTTPFailure(405, raw=json.dumps({"detail": "Method Not Allowed"}).encode())
    if path != "/tts" or method != "POST":
        raise message(400, "not emulated by the stand-in")
    try:
        req = json.loads(body or b"null")
    except ValueError:
        req = None
    if not isinstance(req, dict):
        detail = [{"type": "model_attributes_type", "loc": ["body"], "msg": "Input should be a valid dictionary or "
                   "object to extract fields from", "input": req}]
        raise HTTPFailure(422, raw=json.dumps({"detail": detail}).encode())
    check_params(req)
    if req["text_lang"] not in LANGUAGES or req["prompt_lang"] not in LANGUAGES:
        raise message(400, "tts failed", "")  # TTS.run asserts the value as sent (an AssertionError has no text)
    fault = handler.server.faults.next() or {}
    kind = fault.get("kind")
    if kind == "reset":
        return handler._reset()
    if kind == "delay":
        time.sleep(float(fault.get("seconds", 1.0)))
    if kind == "status":
        raise message(int(fault.get("code", 400)), fault.get("message", "tts failed"), fault.get("exception"))
    audio = reference(req, handler.server.references_dir)
    seed = req.get("seed", -1)
    request = {"text": req["text"], "seed": None if seed in (-1, None, "") else int(seed), "format": "wav",
               "references": [{"audio": audio, "text": req.get("prompt_text") or ""}]}
    if handler.server.ignore_seed:
        request["seed"] = None
    pcm = at_rate(handler._synthesize(request, ignore_reference=kind == "ignore_reference", fault=fault)).tobytes()
    media = req.get("media_type", "wav")
    streaming = req.get("streaming_mode", False) not in (False, 0)
    if not streaming:
        if media == "raw":
            return handler._send(200, pcm, "audio/raw")
        out = io.BytesIO()
        sf.write(out, np.frombuffer(pcm, dtype="<i2"), RATE, subtype="PCM_16", format="WAV")
        return handler._send(200, out.getvalue(), "audio/wav")
    head = header_without_frames() if media == "wav" else b""
    if handler.script is not None and kind != "truncate":  # --stream-profile: chunks leave on the script
        return scripted_answer(handler, req["text"], head + pcm, Layout(len(head), 2, RATE), f"audio/{media}", {},
                               "raw")
    chunks = ([header_without_frames()] if media == "wav" else []) + \
        [pcm[i:i + 16000] for i in range(0, len(pcm), 16000)]
    handler.send_response(200)
    handler.send_header("Content-Type", f"audio/{media}")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    if kind == "truncate":  # the pipeline raising mid-stream: the chunked body ends without its last chunk
        chunks = chunks[: max(1, len(chunks) // 2)]
    for piece in chunks:
        handler.wfile.write(f"{len(piece):X}\r\n".encode() + piece + b"\r\n")
    if kind == "truncate":
        handler.wfile.flush()
        handler.close_connection = True
        return handler.connection.shutdown(socket.SHUT_WR)
    handler.wfile.write(b"0\r\n\r\n")
