"""The OpenAI-compatible ``/v1/audio/speech`` contract (vLLM-Omni serving Fish S2) as the stand-in enforces it
(shared notes, server_protocols.md section 3 and "vLLM-Omni after 2026-06", read 2026-12-01). JSON only; errors
``{"error": {message, type, param, code}}``; ``ref_audio`` must be a ``data:`` URI here (the stand-in fetches no
URLs; raw base64 is rejected as by vLLM); ``ref_text`` is required with ``ref_audio``; a reference soundfile cannot
decode, or outside 1-30 s, is a 400; ``seed`` and ``max_new_tokens`` are lax ints ("42" is 42); ``extra_params``
must be an object; response formats wav, pcm, flac, mp3, opus (``aac`` removed, #4718); ``stream_format="sse"``
or ``stream=true`` answers Server-Sent Events, ``stream_format="audio"`` raw audio (#4490, #4679; streaming needs
pcm or wav; the events: ``sse``); ``GET /health``
(``{"status": "healthy"}``) and ``GET /v1/models``.

Two server builds (``BUILDS``; the stand-in's ``--vllm-build``):

- ``before-5406`` (e.g. 01bc417, 20893221): ``sample_rate`` is not a request field (dropped like any unknown
  field); ``extra_params`` reach only ``SamplingParams.extra_args``, which the Fish slow AR never reads: every
  request is sampled with the deploy config's stage-0 values (``STAGE_SAMPLING``); a seed is any integer.
- ``after-6553`` (the newest, late 2026): ``extra_params.{temperature,top_p,top_k}`` are copied into stage 0's
  SamplingParams (#5406, 76e4a78a), ``repetition_penalty`` still is not; ``sample_rate`` is validated per model
  and Fish refuses it with 400 (#6553); a seed must fit in int64 (#6598).

Both stream as #4679 left it (01bc417 itself predates #4490: there ``stream=true`` streamed raw audio, no events).

The sampling a build applies changes the audio (it is mixed into the synthesis seed), as it does on a real server.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json

import soundfile as sf

from clonebench.standin.fish_api import HTTPFailure, media_type

REF_MIN_S, REF_MAX_S = 1.0, 30.0
# response_format -> soundfile format, content type, options (vLLM-Omni AudioMixin.create_audio)
FORMATS = {"wav": ("WAV", "audio/wav", {}), "pcm": ("RAW", "audio/pcm", {"subtype": "PCM_16"}),
           "flac": ("FLAC", "audio/flac", {}), "mp3": ("MP3", "audio/mpeg", {}),
           "opus": ("OGG", "audio/ogg", {"subtype": "OPUS"})}

STREAM_FORMATS = ("sse", "audio")
BUILDS = ("before-5406", "after-6553")
# vllm_omni/deploy/fish_qwen3_omni.yaml, stage 0 (the slow AR)
STAGE_SAMPLING = {"temperature": 0.8, "top_p": 0.9, "top_k": 30, "repetition_penalty": 1.0}
EXTRA_PARAMS_APPLIED = ("temperature", "top_p", "top_k")  # since #5406; repetition_penalty never reaches stage 0
INT64 = (-(2 ** 63), 2 ** 63 - 1)

MODEL_ID = "fishaudio/s2-pro"
ROUTES = {"/health": ("GET",), "/v1/models": ("GET",), "/v1/audio/speech": ("POST",)}


def error(status: int, message: str, param: str | None = None) -> HTTPFailure:
    kind = {400: "BadRequestError", 404: "NotFoundError", 405: "MethodNotAllowed"}.get(status, "InternalServerError")
    body = {"error": {"message": message, "type": kind, "param": param, "code": status}}
    return HTTPFailure(status, message, raw=json.dumps(body).encode())


def _lax_int(data: dict, name: str, minimum: int | None = None, maximum: int | None = None):
    """pydantic 2 lax int: ints, integral floats and numeric strings ("42"); anything else is a 400."""
    value = data.get(name)
    if value is None:
        return None
    try:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError
        number = int(value.strip()) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise error(400, f"{name}: Input should be a valid integer, got {value!r}", name) from None
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise error(400, f"{name} must be in {minimum}..{maximum}", name)
    return number


def _reference(data: dict) -> list[dict]:
    """The decoded reference, refused like vLLM-Omni: a data URI only here, ref_text required, audio that soundfile
    can decode, 1-30 s long (serving_speech _REF_AUDIO_MIN/MAX_DURATION)."""
    ref_audio = data.get("ref_audio")
    if ref_audio is None:
        return []
    if not isinstance(ref_audio, str) or not ref_audio.startswith("data:"):
        raise error(400, "ref_audio must be an http(s) URL, a data: URI or a file:// path; raw base64 is not "
                         "accepted (the stand-in fetches no URLs)", "ref_audio")
    if not isinstance(data.get("ref_text"), str) or not data["ref_text"].strip():
        raise error(400, "Voice cloning requires 'ref_text' (transcript of the reference audio)", "ref_text")
    try:
        audio = base64.b64decode(ref_audio.split(",", 1)[1], validate=False)
        duration = sf.info(io.BytesIO(audio)).duration
    except (IndexError, binascii.Error, ValueError, RuntimeError, sf.LibsndfileError) as exc:
        raise error(400, f"Failed to decode ref_audio: {exc}", "ref_audio") from None
    if not REF_MIN_S <= duration <= REF_MAX_S:
        raise error(400, f"Reference audio duration {duration:.2f}s is outside the supported range "
                         f"[{REF_MIN_S}, {REF_MAX_S}]s", "ref_audio")
    return [{"audio": audio, "text": data["ref_text"]}]


def _sampling(extra: dict, build: str) -> dict:
    """The stage-0 sampling this build applies to the request."""
    applied = dict(STAGE_SAMPLING)
    if build == "after-6553":
        for name in EXTRA_PARAMS_APPLIED:
            if name in extra:
                value = extra[name]
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise error(400, f"extra_params.{name}: Input should be a valid number, got {value!r}",
                                "extra_params")
                applied[name] = value
    return applied


def _stream(data: dict, response_format: str) -> str | None:
    """None for a plain answer; else how the answer streams, as ``OpenAICreateSpeechRequest.is_raw_audio_stream`` /
    ``is_sse_stream`` decide since #4679 (``protocol/audio.py`` at 0131cb55): ``stream_format="audio"`` streams raw
    audio (with or without ``stream``); ``stream_format="sse"``, or ``stream=true`` without a format, streams events."""
    stream = data.get("stream", False)
    if not isinstance(stream, bool):
        raise error(400, f"stream: Input should be a valid boolean, got {stream!r}", "stream")
    stream_format = data.get("stream_format")
    if stream_format is not None and stream_format not in STREAM_FORMATS:
        raise error(400, f"stream_format: Input should be one of {list(STREAM_FORMATS)}", "stream_format")
    kind = "audio" if stream_format == "audio" else "sse" if stream or stream_format == "sse" else None
    if kind and response_format not in ("pcm", "wav"):
        raise error(400, "Streaming (stream=true, stream_format='audio', or stream_format='sse') requires "
                         f"response_format='pcm' or 'wav'. Got response_format='{response_format}'.", "response_format")
    return kind


def parse(content_type: str | None, raw: bytes, build: str = "after-6553") -> dict:
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
        raise error(400, "Input text cannot be empty", "input")
    if data.get("model") not in (None, MODEL_ID):
        raise error(404, f"The model `{data['model']}` does not exist.", "model")
    response_format = data.get("response_format", "wav")
    if response_format not in FORMATS:
        raise error(400, f"response_format: Input should be one of {sorted(FORMATS)}", "response_format")
    _lax_int(data, "max_new_tokens", 1, 4096)
    if build == "after-6553" and data.get("sample_rate") is not None:  # #6553: only Qwen3-TTS accepts it
        raise error(400, "sample_rate is not supported by the fish_speech model (only Qwen3-TTS accepts it)",
                    "sample_rate")
    seed = _lax_int(data, "seed", *(INT64 if build == "after-6553" else (None, None)))
    extra = data.get("extra_params")
    if extra is not None and not isinstance(extra, dict):
        raise error(400, "extra_params must be a JSON object/dict.", "extra_params")
    return {"text": text, "references": _reference(data), "seed": seed, "format": response_format,
            "streaming": False, "stream": _stream(data, response_format), "voice": data.get("voice", "default"),
            "extra_params": extra or {}, "sampling": _sampling(extra or {}, build)}


def synthesis_seed(request: dict) -> int | None:
    """The seed the stand-in synthesizes with: the request's, mixed with the sampling the build applied (so that
    sampling that takes effect changes the audio and sampling that does not, does not); None stays unseeded."""
    if request["seed"] is None:
        return None
    mixed = json.dumps([request["seed"], request["sampling"]], sort_keys=True).encode()
    return int.from_bytes(hashlib.sha256(mixed).digest()[:8], "big")


def encode(wav: bytes, response_format: str) -> tuple[bytes, str]:
    """The synthesized WAV in the requested format, written with soundfile at the model's rate as vLLM-Omni's
    AudioMixin does (so opus at the 44.1 kHz codec rate fails, as it does there: Fish has no ``sample_rate``)."""
    samples, rate = sf.read(io.BytesIO(wav), dtype="float32")
    kind, content_type, kwargs = FORMATS[response_format]
    out = io.BytesIO()
    try:
        sf.write(out, samples, rate, format=kind, **kwargs)
    except (RuntimeError, sf.LibsndfileError, ValueError) as exc:
        raise error(500, f"Speech generation failed: {exc}") from exc
    return out.getvalue(), content_type


def usage(request: dict, audio: bytes) -> dict:
    """Token usage as vLLM-Omni counts it (``SpeechTokenUsage``, ``protocol/audio.py`` at 0131cb55): the stand-in's
    input tokens are the text's words, its output tokens one per 2048 bytes of audio; no reference codec frames
    (``audio_tokens`` counts them only for Qwen3-TTS in-context cloning)."""
    text, out = len(request["text"].split()), len(audio) // 2048
    return {"input_tokens": text, "output_tokens": out, "total_tokens": text + out,
            "input_token_details": {"text_tokens": text, "audio_tokens": 0}}


def _event(payload: dict) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


def sse(body: bytes, request: dict, audio: bytes, chunk: int = 32768, last: bool = True) -> bytes:
    """A streamed answer as vLLM-Omni's Server-Sent Events (``docs/serving/speech_api.md`` at 078de2d1): each event
    an ``event:`` line and a JSON ``data:`` line; ``speech.audio.delta`` events (``audio``: a base64 piece of ``body``,
    ``response_format``), then (``last``) ``speech.audio.done`` with the ``usage``. No ``data: [DONE]``."""
    events = [{"type": "speech.audio.delta", "audio": base64.b64encode(body[i:i + chunk]).decode("ascii"),
               "response_format": request["format"]} for i in range(0, len(body), chunk)]
    if last:
        events.append({"type": "speech.audio.done", "usage": usage(request, audio)})
    return b"".join(map(_event, events))


def sse_framing(request: dict, audio: bytes):
    """Each scripted piece of a streamed answer as one event (``stream_profile.scripted_answer``'s framing)."""
    return lambda piece, last: sse(piece, request, audio, chunk=max(1, len(piece)), last=last)


def failed_sse(request: dict, audio: bytes) -> bytes:
    """A synthesis failing after the 200 (the ``truncate`` fault): the first half's deltas, then the
    ``speech.audio.error`` event upstream sends instead of ``speech.audio.done`` (its ``error`` the envelope of an
    error answer)."""
    body = encode(audio, request["format"])[0]
    failure = {"message": "Speech generation failed: injected fault", "type": "server_error", "param": None,
               "code": 500}
    return sse(body[:len(body) // 2], request, audio, last=False) + _event({"type": "speech.audio.error",
                                                                            "error": failure})


def answer(handler, request: dict, audio: bytes, kind: str | None) -> None:
    """The 200 answer to a parsed request whose audio (a WAV) is made: whole (token counts in the
    ``x-vllm-omni-*-tokens`` headers, #4499), streamed raw or as events."""
    body, content_type = (audio, "audio/wav") if kind in ("nan", "wav_truncated_header") else \
        encode(audio, request["format"])
    if request["stream"] == "sse":
        return handler._answer(body, "text/event-stream", {}, request, audio, "sse")
    if request["stream"]:
        return handler._answer(body, content_type, {}, request, audio, "raw")
    tokens = usage(request, audio)
    headers = {f"x-vllm-omni-{name.replace('_', '-')}": str(tokens[name])
               for name in ("input_tokens", "output_tokens", "total_tokens")}
    headers.update({f"x-vllm-omni-input-{name.replace('_', '-')}": str(value)
                    for name, value in tokens["input_token_details"].items()})
    return handler._answer(body, content_type, headers, request, audio, None)


def models() -> bytes:
    return json.dumps({"object": "list", "data": [{"id": MODEL_ID, "object": "model", "owned_by": "stand-in"}]}).encode()
