"""Triton Inference Server, KServe v2 HTTP/JSON: the TensorRT-LLM recipes of CosyVoice 2, Spark-TTS and F5-TTS.

Read at pinned commits (the recipes' ``client_http.py`` and ``model_repo/*/config.pbtxt`` are the spec):
FunAudioLLM/CosyVoice 07cbc51cd1d95abc354c03095b31adfd3d8737f4 (``runtime/triton_trtllm/client_http.py``) and
1850e2a56e9ee1e0b4102bd9358a9cc56a25c03a (``model_repo/cosyvoice2/config.pbtxt``), SparkAudio/Spark-TTS
1a11d528aa31266d582368d61630f0c6e4431928 (``runtime/triton_trtllm/client_http.py``), SWivid/F5-TTS
6d1a1e886a2fe29080294b43277d5a1b7448bfb0 (``src/f5_tts/runtime/triton_trtllm/client_http.py``).

Request: ``POST /v2/models/<model>/infer`` (or ``/v2/models/<model>/versions/<v>/infer``), JSON
``{"inputs": [...]}`` with ``reference_wav`` FP32 shape [1, N] (mono samples at the model's reference rate, 16 kHz
in all three recipes' clients), ``reference_wav_len`` INT32 [1, 1] (N), ``reference_text`` BYTES [1, 1] and
``target_text`` BYTES [1, 1]. There is no seed and no sampling field: the model's own config decides both, so a
run against Triton is unseeded (``accepts_seed = False``). The reference is decoded from the pair's file (any
container libsndfile reads), down-mixed to mono and resampled with ``scipy.signal.resample_poly`` (polyphase,
deterministic) to ``adversary.reference_sample_rate``; the body is serialised once, so every retry resends it.

Answer: ``{"model_name", "model_version", "outputs": [{"name": "waveform", "datatype": "FP32", "shape": [1, N]
or [N], "data": [...]}]}`` (the config's output ``waveform`` TYPE_FP32 dims [-1]; with batching the shape gains
the batch dimension). The answer carries no sample rate: it is ``adversary.output_sample_rate`` (24 kHz for
CosyVoice 2 and F5-TTS, 16 kHz for Spark-TTS, as the clients write it). The waveform is validated (datatype,
shape against the data's length, finite, at least one sample, peak at most ``adversary.max_abs``) and saved as a
32-bit float WAV at that rate; anything else is a failed attempt, never a silent clip.

Errors: Triton answers ``{"error": "..."}`` with 400 (bad input), 404 (unknown model), 500 (the model raised) and
501 when the model is decoupled (streaming): its HTTP endpoint does not serve decoupled models, and CosyVoice's
``run.sh`` fills ``decoupled_mode`` True by default. Readiness: ``GET /v2/health/ready``, then
``GET /v2/models/<model>/ready`` (200 ready, 400 not), the model's metadata (its inputs and outputs must be the
ones above) and its config (a decoupled model is refused before any request).
"""

from __future__ import annotations

import io
import json
import math
import re
from typing import Any, ClassVar

import httpx
import numpy as np
import soundfile as sf

from clonebench.adversary.base import (
    Adversary,
    PreparedRequest,
    SynthesisInput,
    not_ready,
)
from clonebench.core.config_reader import ConfigReader
from clonebench.core.errors import ConfigError
from clonebench.data.audio import InvalidAudio, read_input_audio, to_mono

INPUTS = {"reference_wav": "FP32", "reference_wav_len": "INT32", "reference_text": "BYTES", "target_text": "BYTES"}
OUTPUT = "waveform"
RESAMPLER = "scipy.signal.resample_poly (polyphase, Kaiser window 5.0)"
_INFER_PATH = re.compile(r"^(?P<root>.*)/v2/models/(?P<model>[^/]+)(?:/versions/(?P<version>[^/]+))?/infer/?$")


def split_endpoint(endpoint_url: str) -> tuple[httpx.URL, str, str | None]:
    """``http://h:p/v2/models/m/infer`` -> (``http://h:p/``, ``m``, version or None); ValueError otherwise."""
    url = httpx.URL(endpoint_url)
    match = _INFER_PATH.match(url.path)
    if match is None:
        raise ValueError(f"{endpoint_url}: not a Triton infer URL (.../v2/models/<model>/infer)")
    return url.copy_with(path=(match["root"].rstrip("/") or "") + "/", query=None), match["model"], match["version"]


def resample(samples: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """Mono float samples from ``rate_in`` to ``rate_out`` (identity when equal)."""
    if rate_in == rate_out:
        return samples.astype(np.float32)
    from scipy.signal import resample_poly

    g = math.gcd(int(rate_in), int(rate_out))
    return resample_poly(samples.astype(np.float64), rate_out // g, rate_in // g).astype(np.float32)


def describe_error(status: int, body: bytes) -> str | None:
    """Triton's error JSON, classified by status."""
    try:
        message = json.loads(body).get("error")
    except (ValueError, AttributeError, UnicodeDecodeError):
        message = None
    if not isinstance(message, str):
        return None
    kind = {400: "Triton refused the request", 404: "Triton: model not found (check adversary.model and the "
            "model repository)", 500: "Triton: the model failed", 501: "Triton: not served over HTTP (a decoupled "
            "model: set decoupled_mode False in its config.pbtxt and restart)"}.get(status, "Triton error")
    return f"{kind}: {message[:300]!r}"


def instance_key(model: str):
    """An error text with the model instance that served it set aside: Triton names each instance
    ``<model>_<group>_<index>`` (``cosyvoice2_0_2``) and its backends say "model instance '<name>'", so one
    deterministic model error reads differently on each of a recipe's several instances (the early stop)."""
    named = re.compile(r"\b" + re.escape(model) + r"_\d+_\d+\b")
    quoted = re.compile(r"(model instance ')[^']*(')")
    return lambda text: quoted.sub(r"\1<instance>\2", named.sub(model, text))


def waveform_to_wav(body: bytes, sample_rate: int, max_abs: float, model: str | None = None) -> bytes:
    """A KServe v2 infer answer -> a 32-bit float mono WAV of its ``waveform`` output; InvalidAudio otherwise."""
    try:
        answer = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidAudio(f"the answer is not JSON ({type(exc).__name__}), expected a KServe v2 infer response") \
            from None
    if not isinstance(answer, dict) or not isinstance(answer.get("outputs"), list):
        raise InvalidAudio("the answer has no 'outputs' list (not a KServe v2 infer response)")
    if model is not None and answer.get("model_name") not in (None, model):
        raise InvalidAudio(f"the answer is from model {answer.get('model_name')!r}, not {model!r}")
    found = [o for o in answer["outputs"] if isinstance(o, dict) and o.get("name") == OUTPUT]
    if len(found) != 1:
        names = [o.get("name") if isinstance(o, dict) else o for o in answer["outputs"]]
        raise InvalidAudio(f"expected one output {OUTPUT!r}, got {names!r}")
    output = found[0]
    if output.get("datatype") != "FP32":
        raise InvalidAudio(f"output {OUTPUT!r} has datatype {output.get('datatype')!r}, expected FP32")
    shape, data = output.get("shape"), output.get("data")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                              for d in shape):
        raise InvalidAudio(f"output {OUTPUT!r} has shape {shape!r}, expected [N] or [1, N]")
    if not (len(shape) == 1 or (len(shape) == 2 and shape[0] == 1)):
        raise InvalidAudio(f"output {OUTPUT!r} has shape {shape!r}: one mono waveform is [N] or [1, N]")
    if isinstance(data, list) and len(shape) == 2 and len(data) == 1 and isinstance(data[0], list):
        data = data[0]  # the nested form of [1, N]
    if not isinstance(data, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in data):
        raise InvalidAudio(f"output {OUTPUT!r}: 'data' is not a flat list of numbers")
    if len(data) != shape[-1]:
        raise InvalidAudio(f"output {OUTPUT!r}: shape {shape} but {len(data)} values")
    if not data:
        raise InvalidAudio(f"output {OUTPUT!r} is empty (shape {shape})")
    samples = np.asarray(data, dtype=np.float64)
    if not np.isfinite(samples).all():
        raise InvalidAudio(f"output {OUTPUT!r}: {int((~np.isfinite(samples)).sum())} sample(s) are NaN or infinite")
    peak = float(np.abs(samples).max())
    if peak > max_abs:
        raise InvalidAudio(f"output {OUTPUT!r} peaks at {peak:.4g}, above adversary.max_abs={max_abs:g} "
                           "(not a float waveform in [-1, 1])")
    out = io.BytesIO()
    sf.write(out, samples.astype(np.float32), sample_rate, format="WAV", subtype="FLOAT")
    return out.getvalue()


class TritonKServe(Adversary):
    protocol = "triton_kserve"
    accepts_seed: ClassVar[bool] = False  # no seed input in any of the recipes' models

    def __init__(self, client, params):
        super().__init__(client, params)
        for url in client.endpoint_urls:
            try:
                _, model, version = split_endpoint(url)
            except ValueError as exc:
                raise ConfigError(f"adversary.endpoint_url: {exc}") from None
            if model != params["model"] or version != params["model_version"]:
                raise ConfigError(f"adversary.endpoint_url {url} names model {model!r} version {version!r}, but "
                                  f"adversary.model={params['model']!r} model_version={params['model_version']!r}")

    @classmethod
    def read_params(cls, reader: ConfigReader) -> dict[str, Any]:
        version = reader.str("adversary.model_version", None, allow_none=True)
        return {
            "model": reader.str("adversary.model"),
            "model_version": version or None,
            "reference_sample_rate": reader.int("adversary.reference_sample_rate", minimum=8000, maximum=192000),
            "output_sample_rate": reader.int("adversary.output_sample_rate", minimum=8000, maximum=192000),
            "max_abs": reader.float("adversary.max_abs", minimum=0.0),
        }

    def request_fingerprint_fields(self) -> dict[str, Any]:
        return {**super().request_fingerprint_fields(), "seed_supported": False, "resampler": RESAMPLER}

    def effective_sampling(self) -> dict[str, Any]:
        return {"sampling": "the model's own config (no request field)", "seed": None}

    def _model_path(self) -> str:
        version = self.params["model_version"]
        return f"v2/models/{self.params['model']}" + (f"/versions/{version}" if version else "")

    async def check_ready(self, http: httpx.AsyncClient, endpoint_url: str) -> dict[str, Any]:
        root = split_endpoint(endpoint_url)[0]
        model = self.params["model"]

        async def get(path: str) -> httpx.Response:
            url = str(root.join(path))
            try:
                return await http.get(url)
            except httpx.HTTPError as exc:
                raise not_ready(f"Triton server not ready: GET {url}: {exc!r}. Start tritonserver or fix "
                                "adversary.endpoint_url", may_recover=True) from exc

        # The model's own readiness decides, not the server's: Triton's /v2/health/ready is strict by default
        # (400 while ANY model of its repository is unloaded or failed), and a model that is loading or unloaded
        # answers its metadata with 404 "has no available versions", unlike an unknown one ("is not found"):
        # both checked against tritonserver 2.51 (bench/real_triton.py, docs/servers-triton.md).
        ready = await get(f"{self._model_path()}/ready")
        meta = await get(self._model_path())
        if ready.status_code != 200:
            if meta.status_code == 404 and "is not found" in meta.text:
                raise not_ready(f"Triton has no model {model!r}: GET {meta.url} answered HTTP 404 "
                                f"{meta.text[:200]!r}; set adversary.model to a model of its repository",
                                may_recover=False)
            health = await get("v2/health/ready")
            raise not_ready(f"Triton model {model!r} not ready: GET {ready.url} answered HTTP {ready.status_code} "
                            f"{ready.text[:200]!r} (loading, unloaded or failed; server health: HTTP "
                            f"{health.status_code})", may_recover=True)
        if meta.status_code != 200:
            raise not_ready(f"Triton model {model!r} is ready but its metadata GET {meta.url} answered HTTP "
                            f"{meta.status_code} {meta.text[:200]!r}", may_recover=True)
        try:
            described = meta.json()
            inputs = {i["name"]: i["datatype"] for i in described.get("inputs", [])}
            outputs = {o["name"]: o["datatype"] for o in described.get("outputs", [])}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise not_ready(f"Triton model {model!r}: unreadable metadata at {meta.url}: {exc!r}",
                            may_recover=False) from None
        if any(inputs.get(k) != v for k, v in INPUTS.items()) or outputs.get(OUTPUT) != "FP32":
            raise not_ready(f"Triton model {model!r} takes {inputs} and gives {outputs}, not the recipes' "
                            f"{INPUTS} -> {{{OUTPUT!r}: 'FP32'}}", may_recover=False)
        config = await get(f"{self._model_path()}/config")
        decoupled = None
        if config.status_code == 200:
            try:
                decoupled = bool(config.json().get("model_transaction_policy", {}).get("decoupled", False))
            except (ValueError, AttributeError):
                decoupled = None
        if decoupled:
            raise not_ready(f"Triton model {model!r} is decoupled (model_transaction_policy.decoupled): its HTTP "
                            "endpoint answers 501. Fill decoupled_mode False in its config.pbtxt and restart",
                            may_recover=False)
        return {"url": str(ready.url), "status_code": 200, "model": model,
                "model_versions": described.get("versions"), "decoupled": decoupled}

    def reference_samples(self, item: SynthesisInput) -> np.ndarray:
        info, samples = read_input_audio(item.reference_audio)
        return resample(to_mono(samples), info.sample_rate, self.params["reference_sample_rate"])

    def request_body(self, item: SynthesisInput) -> bytes:
        wav = self.reference_samples(item)
        body = {"inputs": [
            {"name": "reference_wav", "shape": [1, len(wav)], "datatype": "FP32", "data": wav.tolist()},
            {"name": "reference_wav_len", "shape": [1, 1], "datatype": "INT32", "data": [[len(wav)]]},
            {"name": "reference_text", "shape": [1, 1], "datatype": "BYTES", "data": [item.reference_text]},
            {"name": "target_text", "shape": [1, 1], "datatype": "BYTES", "data": [item.text]},
        ]}
        return json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")

    def to_wav(self, body: bytes) -> bytes:
        return waveform_to_wav(body, self.params["output_sample_rate"], self.params["max_abs"], self.params["model"])

    def prepare(self, item: SynthesisInput) -> PreparedRequest:
        return PreparedRequest("POST", self.client.endpoint_url, self.request_body(item),
                               {"Content-Type": "application/json"}, to_wav=self.to_wav,
                               describe_error=describe_error, error_key=instance_key(self.params["model"]))
