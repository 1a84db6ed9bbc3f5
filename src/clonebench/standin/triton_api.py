"""Triton's KServe v2 HTTP routes as the stand-in serves them for the TTS recipes (its own emulation, no upstream code).

Written from the recipes at FunAudioLLM/CosyVoice 07cbc51cd1d95abc354c03095b31adfd3d8737f4
(``runtime/triton_trtllm/client_http.py``; ``model_repo/cosyvoice2/config.pbtxt`` at 1850e2a56e9e: inputs
reference_wav FP32 [-1], reference_wav_len INT32 [1], reference_text / target_text TYPE_STRING [1], output waveform
FP32 [-1], ``decoupled: ${decoupled_mode}``), SparkAudio/Spark-TTS 1a11d528aa31 (16 kHz answer) and SWivid/F5-TTS
6d1a1e886a2f (24 kHz answer). Status codes follow Triton's HTTP front end: ``{"error": ...}`` with 400 for a bad
request, 404 for an unknown model, 500 when the model raises, 501 for a decoupled model over HTTP; the ready routes
answer 200 or 400 with an empty body.

Routes: ``GET /v2/health/live``, ``/v2/health/ready``, ``/v2/models/<m>`` (metadata), ``/v2/models/<m>/ready``,
``/v2/models/<m>/config``, ``POST /v2/models/<m>[/versions/<v>]/infer``. Test knobs, set on the server object:
``triton_unready`` (a set of model names loaded but not ready), ``triton_decoupled`` (a set of decoupled models),
``triton_instances`` (how many instances serve a model: a ``status`` fault's ``{instance}`` names them in turn,
``<model>_0_<k>``, as Triton's backends name the instance that failed).
Faults: ``status`` (the error JSON), ``nan`` (a waveform holding NaN, as JSON's non-standard ``NaN``), ``not_wav``
(a body that is not JSON) and the rest as the other protocols take them.
"""

from __future__ import annotations

import io
import json
import re

import numpy as np
import soundfile as sf
from scipy.signal import resample_poly

from clonebench.standin.fish_api import HTTPFailure, media_type

MODELS = {"cosyvoice2": 24000, "spark_tts": 16000, "f5_tts": 24000}  # the rate each recipe's answer is in
REFERENCE_RATE = 16000
INPUTS = {"reference_wav": ("FP32", [-1, -1]), "reference_wav_len": ("INT32", [-1, 1]),
          "reference_text": ("BYTES", [-1, 1]), "target_text": ("BYTES", [-1, 1])}
ROUTES: dict[str, tuple[str, ...]] = {}  # dynamic: see route()
_MODEL_PATH = re.compile(r"^/v2/models/(?P<model>[^/]+)(?:/versions/(?P<version>[^/]+))?(?P<rest>/ready|/config|"
                         r"/infer)?$")


def error(status: int, message: str) -> HTTPFailure:
    return HTTPFailure(status, message, raw=json.dumps({"error": message}).encode())


def empty(status: int) -> HTTPFailure:
    return HTTPFailure(status, None, raw=b"", content_type="text/plain")


def metadata(model: str) -> dict:
    return {"name": model, "versions": ["1"], "platform": "python",
            "inputs": [{"name": k, "datatype": t, "shape": s} for k, (t, s) in INPUTS.items()],
            "outputs": [{"name": "waveform", "datatype": "FP32", "shape": [-1, -1]}]}


def config(model: str, decoupled: bool) -> dict:
    return {"name": model, "backend": "python", "max_batch_size": 16,
            "model_transaction_policy": {"decoupled": decoupled}}


def parse_infer(content_type: str | None, raw: bytes) -> dict:
    """The request as the recipes' model.py reads it: one reference waveform (length reference_wav_len), both texts."""
    if media_type(content_type) not in ("application/json", ""):
        raise error(400, f"unsupported content type {content_type!r}")
    try:
        body = json.loads(raw)
        given = {i["name"]: i for i in body["inputs"]}
    except (ValueError, KeyError, TypeError) as exc:
        raise error(400, f"failed to parse the request JSON: {type(exc).__name__}") from None
    for name, (datatype, _) in INPUTS.items():
        if name not in given:
            raise error(400, f"expected 4 inputs but got {len(given)} inputs for model; missing '{name}'")
        if given[name].get("datatype") != datatype:
            raise error(400, f"inference input '{name}' data-type is '{given[name].get('datatype')}', but model "
                        f"expects '{datatype}'")
    extra = sorted(set(given) - set(INPUTS))
    if extra:
        raise error(400, f"unexpected inference input '{extra[0]}' for model")
    wav = np.asarray(given["reference_wav"]["data"], dtype=np.float32).reshape(-1)
    shape = given["reference_wav"].get("shape")
    if shape != [1, wav.size]:
        raise error(400, f"unexpected shape for input 'reference_wav', got {shape} for {wav.size} values")
    length = int(np.asarray(given["reference_wav_len"]["data"]).reshape(-1)[0])
    if not 0 < length <= wav.size:
        raise error(500, f"reference_wav_len {length} outside 1..{wav.size}")
    texts = {k: np.asarray(given[k]["data"]).reshape(-1)[0] for k in ("reference_text", "target_text")}
    if not all(isinstance(t, str) for t in texts.values()):
        raise error(400, "BYTES inputs must hold strings")
    return {"wav": wav[:length], "reference_text": texts["reference_text"], "text": texts["target_text"]}


def reference_wav(samples: np.ndarray) -> bytes:
    out = io.BytesIO()
    sf.write(out, np.clip(samples, -1.0, 1.0), REFERENCE_RATE, subtype="FLOAT", format="WAV")
    return out.getvalue()


def answer(model: str, wav: bytes, nan: bool = False) -> bytes:
    """The model's waveform at its rate, as Triton's JSON infer response (shape [1, N]: batched model)."""
    samples, rate = sf.read(io.BytesIO(wav), dtype="float32")
    out = resample_poly(samples, MODELS[model], rate).astype(np.float32)
    if nan:
        out[len(out) // 2] = np.nan
    return json.dumps({"model_name": model, "model_version": "1", "outputs": [
        {"name": "waveform", "datatype": "FP32", "shape": [1, len(out)], "data": out.tolist()}]}).encode()


def route(handler, method: str, path: str, raw: bytes) -> None:
    """Serve one non-control request on ``handler`` (the stand-in's request handler)."""
    server = handler.server
    if path in ("/v2/health/live", "/v2/health/ready"):
        if method != "GET":
            raise error(405, "Method Not Allowed")
        if path.endswith("/ready") and getattr(server, "triton_unready", set()):
            raise empty(400)  # strict readiness (tritonserver's default): any model not ready fails the server's
        return handler._send(200, b"", "text/plain")
    match = _MODEL_PATH.match(path)
    if match is None:
        raise error(404, "Not Found")
    model, rest = match["model"], match["rest"]
    if model not in MODELS or match["version"] not in (None, "1"):
        raise error(404 if rest != "/ready" else 400, f"Request for unknown model: '{model}' is not found")
    ready = model not in getattr(server, "triton_unready", set())
    decoupled = model in getattr(server, "triton_decoupled", set())
    if rest == "/ready":
        if not ready:
            raise empty(400)
        return handler._send(200, b"", "text/plain")
    if rest is None:
        if not ready:  # an unloaded or loading model, as tritonserver 2.51 answers its metadata
            raise error(404, f"Request for unknown model: '{model}' has no available versions")
        return handler._json(200, metadata(model))
    if rest == "/config":
        return handler._json(200, config(model, decoupled))
    if method != "POST":
        raise error(405, "Method Not Allowed")
    if not ready:
        raise error(400, f"Request for unknown model: '{model}' has no available versions")
    if decoupled:
        raise error(501, "HTTP end point doesn't support models with decoupled transaction policy")
    request = parse_infer(handler.headers.get("Content-Type"), raw)
    fault = server.faults.next() or {}
    kind = fault.get("kind")
    if kind == "reset":
        return handler._reset()
    if kind == "status":  # "{instance}" in the message: the instance that served it, round robin over
        served = getattr(server, "triton_served", 0)  # triton_instances (the recipes run several)
        server.triton_served = served + 1
        instance = f"{model}_0_{served % max(1, getattr(server, 'triton_instances', 1))}"
        failure = error(int(fault.get("code", 500)), fault.get("message", "injected fault").replace("{instance}",
                                                                                                    instance))
        if "retry_after" in fault:
            failure.headers["Retry-After"] = str(fault["retry_after"])
        raise failure
    if kind == "not_wav":
        return handler._send(200, b"<html>upstream proxy error</html>", "application/json")
    synth = {"text": request["text"], "seed": None,  # no seed input: every request differs, as a sampling model does
             "references": [{"audio": reference_wav(request["wav"]), "text": request["reference_text"]}]}
    wav = handler._synthesize(synth, ignore_reference=kind == "ignore_reference", fault=fault)
    return handler._send(200, answer(model, wav, nan=kind == "nan"), "application/json")
