"""The s2.cpp ``POST /generate`` contract as the stand-in enforces it (shared notes, server_protocols.md section 2).

Multipart only; ``text`` must be a plain field (empty text is accepted); the reference is a file part (aliases reference_audio,
prompt_audio, ref_audio) and needs a transcript (aliases ref_text, prompt_text); ``params`` is a JSON object
as a string, type-checked like s2.cpp's nlohmann::json reads. Errors: 400 JSON ``{"error": ...}`` (missing text,
``JSON parse error``, ``Params JSON must be an object``, ``Invalid params JSON: ...``), 400 text/plain (reference
without transcript), 503 text/plain while busy, 413 above 100 MB. Reference audio that cannot be decoded
is ignored (uncloned voice, 200). Success: a 32-bit float WAV with Content-Length.

Streaming (``params``, ``answer``; rodrigomatta/s2.cpp 2c33261 ``src/s2_server.cpp``, read, not copied): ``stream``
(or ``segment_sentences``) without ``chunked``/``realtime`` answers the whole audio as a finalized 16-bit WAV, or
raw s16le with a PCM ``output_format`` (``audio/L16; rate=44100; channels=1`` and ``X-Audio-*`` headers), with
Content-Length; with ``chunked`` (``realtime`` wins when both are sent) a chunked body: the 44-byte 16-bit WAV
header with the placeholder sizes 0x7FFFFFF0, written before the synthesis (on the stand-in's script: at once),
then PCM16 as it is made; a PCM ``output_format`` drops the header. The server's 3 s start buffer for chunked PCM
(``stream_start_buffer_ms``) is not emulated.
"""

from __future__ import annotations

import email.parser
import email.policy
import io
import json
import struct

import numpy as np
import soundfile as sf

from clonebench.standin import wavs
from clonebench.standin.fish_api import HTTPFailure, media_type
from clonebench.standin.stream_profile import Layout, scripted_answer
from clonebench.standin.voice import OUTPUT_RATE

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
PCM_FORMATS = ("pcm", "pcm16", "pcm_s16le", "s16le")  # output_format values that mean raw s16le (any case)
PLACEHOLDER = 0x7FFFFFF0  # s2_audio.cpp's kStreamingPlaceholderChunkSize
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


def streaming_header(rate: int = OUTPUT_RATE) -> bytes:
    """The 44-byte mono 16-bit WAV header s2.cpp writes before a streamed answer: both sizes the placeholder."""
    return struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", PLACEHOLDER, b"WAVE", b"fmt ", 16, 1, 1, rate, rate * 2, 2, 16,
                       b"data", PLACEHOLDER)


def answer(handler, request: dict, audio: bytes, kind: str | None) -> None:
    """The 200 answer to a parsed request whose audio (a 16-bit WAV) is made, as its ``params`` ask."""
    params, script = request["params"], handler.script
    broken = kind in ("nan", "wav_truncated_header")
    if broken or not (params.get("stream") or params.get("segment_sentences")):
        body = audio if broken else float_wav(audio)
        if script is not None and not broken:  # --stream-profile: the whole WAV when it is done
            layout = Layout(len(body) - 4 * sf.info(io.BytesIO(audio)).frames, 4, OUTPUT_RATE)
            return scripted_answer(handler, request["text"], body, layout, "audio/wav", {}, None)
        return handler._send(200, body, "audio/wav", {"Content-Disposition": 'attachment; filename="generated_audio.wav"'})
    pcm = wavs.pcm_only(audio)
    is_pcm = str(params.get("output_format", "wav")).lower() in PCM_FORMATS
    headers = {"Content-Disposition": f'attachment; filename="generated_audio.{"pcm" if is_pcm else "wav"}"'}
    if is_pcm:
        headers.update({"X-Audio-Sample-Rate": str(OUTPUT_RATE), "X-Audio-Channels": "1",
                        "X-Audio-Encoding": "pcm_s16le"})
    content_type = f"audio/L16; rate={OUTPUT_RATE}; channels=1" if is_pcm else "audio/wav"
    chunked = params.get("realtime", params.get("chunked", False))
    head = b"" if is_pcm else streaming_header()
    if not chunked and not is_pcm:  # buffered: the header's sizes patched once the audio is complete
        head = head[:4] + struct.pack("<I", 36 + len(pcm)) + head[8:40] + struct.pack("<I", len(pcm))
    body = head + pcm
    if script is not None:
        layout = Layout(len(head), 2, OUTPUT_RATE)
        return scripted_answer(handler, request["text"], body, layout, content_type, headers,
                               "raw" if chunked else None, header_first=True)
    handler._send(200, body, content_type, headers, chunked=bool(chunked))
