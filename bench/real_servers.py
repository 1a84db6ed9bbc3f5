#!/usr/bin/env python
"""clonebench's real requests through an upstream server's own HTTP app, with only the model call stubbed.

Given a local checkout of an upstream cloning server at its pinned commit, this starts that server's own web layer
(its FastAPI app, routes, request models, form/JSON parsing, reference decoding and response code, all imported from
the checkout unchanged) with the model classes replaced by stubs (no weights, no GPU), on 127.0.0.1, and runs
clonebench's real generate phase (``run_vc.py`` with the adversary's config) against it on the eSpeak NG demo pairs.
It then checks that every request was accepted by the real request layer (HTTP 200, one attempt), that the stub
saw the fields the adapter means to send (text, prompt text, reference, seed, language codes ...), and that every
saved WAV validates with the rate and length the stub produced. The stub's answer is deterministic audio derived
from what it received, so a lost or altered field shows up as a failed check.

Not run in CI: it needs the upstream checkout (and a Python with the upstream web layer's PyPI packages). Run the
launcher part with that Python; clonebench's side runs with this interpreter::

    python -m venv --system-site-packages /tmp/up/venv
    /tmp/up/venv/bin/pip install fastapi uvicorn python-multipart
    python bench/real_servers.py --server cosyvoice --checkout /tmp/up/cosyvoice --python /tmp/up/venv/bin/python

``--system-site-packages`` lends the venv this environment's numpy, soundfile, torch and torchaudio (CosyVoice's
``load_wav`` uses torchaudio). Zonos 2 (``--server zonos2 --checkout <ZONOS2 checkout>``) also needs ``pyzmq`` (its
frontend talks to its backend over ZMQ with msgpack messages) and ``ffmpeg`` on the PATH (it transcodes the
reference). SGLang-Omni (``--server sglang_omni``) needs ``transformers<5`` (its ``sglang_omni.utils`` imports it)
and torchaudio's ``torchcodec`` backend (its preprocessing loads the reference with ``torchaudio.load``); its GPU
runtime (``sglang``) is never imported. What is not checked: the model itself (its sampling, its own refusals raised inside
inference, its real chunking and timing), and any route other than the one the adapter uses.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent

SERVERS = {
    "cosyvoice": {
        "commit": "ace7c47f41bbd303aa6bf1ea80e6f9fbd595cd40",
        "module": "runtime/python/fastapi/server.py",
        "adversary": "cosyvoice_http",
        "path": "/inference_zero_shot",
    },
    "gpt_sovits": {
        "commit": "48b1a0169a28582a8984402f82cf438d3bfa6aca",
        "module": "api_v2.py",
        "adversary": "gpt_sovits_http",
        "path": "/tts",
    },
    "zonos2": {
        "commit": "8fee419a5850581411edea6c456481076e2d23ea",
        "module": "python/zonos2/server/api_server.py",
        "adversary": "zonos2_http",
        "path": "/tts/generate",
    },
    "sglang_omni": {
        "commit": "2489a10eecb91bbd1bdbe8b511b0bdf23d341f3f",
        "module": "sglang_omni/serve/openai_api.py",
        "adversary": "sglang_omni_speech",
        "path": "/v1/audio/speech",
    },
}


# --- the launcher: runs under the upstream Python, imports the upstream app with stubbed model classes ---------

class Recorder:
    def __init__(self, path: str):
        self.path = path

    def __call__(self, **event) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")


def stub_seconds(text: str) -> float:
    """The stub's answer length: a function of the text it received (0.5 s + 20 ms per character)."""
    return 0.5 + 0.02 * len(text)


def stub_tone(text: str, sample_rate: int):
    import numpy as np

    n = round(stub_seconds(text) * sample_rate)
    t = np.arange(n) / sample_rate
    return (0.25 * np.sin(2 * np.pi * (150 + len(text)) * t)).astype(np.float32)


def load_module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def serve_cosyvoice(checkout: Path, record: Recorder, port: int):
    """CosyVoice's FastAPI server with ``cosyvoice.cli.cosyvoice`` (AutoModel) stubbed; ``load_wav`` is upstream's."""
    import torch

    sample_rate = 24000  # CosyVoice 2/3 (cosyvoice.yaml sample_rate)

    class StubModel:
        def __init__(self, model_dir=None, **kwargs):
            self.sample_rate = sample_rate

        def inference_zero_shot(self, tts_text, prompt_text, prompt_speech_16k, stream=False, speed=1.0, **kwargs):
            tone = torch.from_numpy(stub_tone(tts_text, sample_rate)).unsqueeze(0)
            record(route="inference_zero_shot", tts_text=tts_text, prompt_text=prompt_text,
                   prompt_shape=list(prompt_speech_16k.shape), prompt_dtype=str(prompt_speech_16k.dtype),
                   prompt_sum=float(prompt_speech_16k.abs().sum()), answer_samples=tone.shape[1])
            half = tone.shape[1] // 2  # two chunks, as the model streams
            yield {"tts_speech": tone[:, :half]}
            yield {"tts_speech": tone[:, half:]}

    stub = types.ModuleType("cosyvoice.cli.cosyvoice")
    stub.AutoModel = stub.CosyVoice = stub.CosyVoice2 = StubModel
    sys.path.insert(0, str(checkout))
    sys.modules["cosyvoice.cli.cosyvoice"] = stub  # the real packages cosyvoice, cosyvoice.cli come from the checkout
    module = load_module("cosyvoice_fastapi_server", checkout / SERVERS["cosyvoice"]["module"])
    module.cosyvoice = StubModel()  # what the server's __main__ does, with the stub
    return module.app


def upstream_class_lists(path: Path, class_name: str) -> dict:
    """The list literals in an upstream class body (read with ast: the module itself needs the model's packages)."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return {stmt.target.id: ast.literal_eval(stmt.value) for stmt in node.body
                    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.value, ast.List)}
    raise SystemExit(f"{class_name} not found in {path}")


def serve_gpt_sovits(checkout: Path, record: Recorder, port: int):
    """api_v2.py with ``GPT_SoVITS.TTS_infer_pack.TTS`` (TTS, TTS_Config) stubbed; everything else is upstream's."""
    import hashlib

    import numpy as np

    sample_rate = 32000  # v2 models
    lists = upstream_class_lists(checkout / "GPT_SoVITS/TTS_infer_pack/TTS.py", "TTS_Config")

    class StubConfig:
        def __init__(self, path=None):
            self.version = "v2"
            self.languages = lists["v2_languages"]  # upstream's own list for v2

    class StubTTS:
        def __init__(self, config):
            self.configs = config

        def run(self, inputs: dict):
            path = inputs["ref_audio_path"]
            if not os.path.exists(path):
                raise ValueError(f"{path} not exists")  # TTS.run's own check
            data = Path(path).read_bytes()
            tone = (stub_tone(inputs["text"], sample_rate) * 32767).astype(np.int16)
            record(route="tts", **{k: v for k, v in inputs.items() if k != "aux_ref_audio_paths"},
                   ref_sha256=hashlib.sha256(data).hexdigest(), answer_samples=int(tone.shape[0]))
            if inputs.get("streaming_mode") or inputs.get("return_fragment"):
                third = tone.shape[0] // 3
                for chunk in (tone[:third], tone[third:2 * third], tone[2 * third:]):
                    yield sample_rate, chunk
            else:
                yield sample_rate, tone

    stub = types.ModuleType("GPT_SoVITS.TTS_infer_pack.TTS")
    stub.TTS, stub.TTS_Config = StubTTS, StubConfig
    os.chdir(checkout)  # api_v2 runs from the checkout's root (tools/i18n reads its locale by a relative path)
    sys.path.insert(0, str(checkout))
    package = types.ModuleType("GPT_SoVITS.TTS_infer_pack")  # its __init__ imports TTS (the model): skipped, but
    package.__path__ = [str(checkout / "GPT_SoVITS/TTS_infer_pack")]  # text_segmentation_method is upstream's
    sys.modules["GPT_SoVITS.TTS_infer_pack"] = package
    sys.modules["GPT_SoVITS.TTS_infer_pack.TTS"] = package.TTS = stub
    sys.argv = ["api_v2.py", "-a", "127.0.0.1", "-p", str(port)]
    module = load_module("gpt_sovits_api_v2", checkout / SERVERS["gpt_sovits"]["module"])
    return module.APP


def skip_package_init(name: str, folder: Path, **members) -> types.ModuleType:
    """A package whose ``__init__`` (which imports the model) is skipped; its submodules are the checkout's."""
    package = types.ModuleType(name)
    package.__path__ = [str(folder)]
    package.__dict__.update(members)
    sys.modules[name] = package
    return package


def serve_zonos2(checkout: Path, record: Recorder, port: int) -> None:
    """Zonos 2's api_server.py served by its own ``run_api_server`` (FastAPI app, FrontendManager, ZMQ queues and
    msgpack messages all upstream's), with the backend processes (tokenizer, scheduler, vocoder) replaced by a stub
    thread on the same ZMQ addresses, the Qwen3 speaker embedder by a stub, and the checkpoint's model config by a
    stub config (speaker conditioning on, 2048-d embeddings: the release encoder's size)."""
    import threading

    import torch

    sample_rate = 44100  # float32 PCM at 44.1 kHz (TTSAudioReply)
    root = checkout / "python"
    sys.path.insert(0, str(root))
    # the engine and scheduler packages' __init__ import the model (sgl_kernel, CUDA); their config modules don't
    skip_package_init("zonos2.engine", root / "zonos2/engine")
    from zonos2.engine.config import EngineConfig
    sys.modules["zonos2.engine"].EngineConfig = EngineConfig
    skip_package_init("zonos2.scheduler", root / "zonos2/scheduler")
    from zonos2.scheduler.config import SchedulerConfig
    sys.modules["zonos2.scheduler"].SchedulerConfig = SchedulerConfig

    class StubSpeakerEmbedding:  # zonos2.models.speaker_cloning.Qwen3SpeakerEmbedding
        def __init__(self, device="cpu"):
            self.device = device

        def __call__(self, wav, sample_rate):
            # what the embedder received, carried in the embedding itself through the ZMQ messages to the backend
            embedding = torch.zeros(1, 2048, dtype=torch.float32)
            embedding[0, :4] = torch.tensor([wav.shape[0], wav.shape[1], float(sample_rate), float(wav.abs().sum())])
            embedding[0, 4] = float(str(wav.dtype) == "torch.float32")
            return embedding

    models = types.ModuleType("zonos2.models")
    models.__path__ = []
    cloning = types.ModuleType("zonos2.models.speaker_cloning")
    cloning.Qwen3SpeakerEmbedding = StubSpeakerEmbedding
    sys.modules["zonos2.models"], sys.modules["zonos2.models.speaker_cloning"] = models, cloning
    models.speaker_cloning = cloning

    from zonos2.distributed import DistributedInfo
    from zonos2.message import (
        BaseFrontendMsg,
        BaseTokenizerMsg,
        TTSAudioReply,
        TTSTokenizeMsg,
    )
    from zonos2.server.api_server import run_api_server
    from zonos2.server.args import ServerArgs
    from zonos2.utils import ZmqPullQueue, ZmqPushQueue

    config = ServerArgs(model_path="stub/Zyphra-ZONOS2", tp_info=DistributedInfo(0, 1), dtype=torch.bfloat16,
                        server_host="127.0.0.1", server_port=port)
    # EngineConfig.model_config is a cached_property over the checkpoint's config (a download): set it here
    config.__dict__["model_config"] = types.SimpleNamespace(
        speaker_enabled=True, speaker_embedding_dim=2048, n_codebooks=9,
        rotary_config=types.SimpleNamespace(max_position=4096))

    def backend():
        # the tokenizer's side of the link: binds the tokenizer address, connects to the frontend's (launch.py)
        pull = ZmqPullQueue(config.zmq_tokenizer_addr, create=config.tokenizer_create_addr,
                            decoder=BaseTokenizerMsg.decoder)
        push = ZmqPushQueue(config.zmq_frontend_addr, create=False, encoder=BaseFrontendMsg.encoder)
        while True:
            msg = pull.get()
            if not isinstance(msg, TTSTokenizeMsg):
                continue
            tone = stub_tone(msg.text, sample_rate)
            embedding = msg.speaker_embedding
            record(route="tts_generate", text=msg.text, language=msg.language,
                   text_normalization=msg.text_normalization, seed=msg.sampling_params.seed,
                   sampling={k: v for k, v in vars(msg.sampling_params).items()},
                   accurate_mode=msg.accurate_mode, clean_speaker_background=msg.clean_speaker_background,
                   embedding_shape=None if embedding is None else list(embedding.shape),
                   reference=None if embedding is None else [float(v) for v in embedding[:5]],
                   answer_samples=int(tone.shape[0]))
            third = tone.shape[0] // 3  # three chunks, as the vocoder streams
            for chunk in (tone[:third], tone[third:2 * third], tone[2 * third:]):
                push.put(TTSAudioReply(uid=msg.uid, audio_data=chunk.tobytes(), finished=False))
            push.put(TTSAudioReply(uid=msg.uid, audio_data=b"", finished=True))

    # upstream's own entry: it builds the FrontendManager on the ZMQ addresses, starts the backend, runs uvicorn
    run_api_server(config, lambda: threading.Thread(target=backend, daemon=True).start(), run_shell=False)


def serve_sglang_omni(checkout: Path, record: Recorder, port: int):
    """SGLang-Omni's ``create_app`` (FastAPI app, ``CreateSpeechRequest``, ``_build_speech_generate_request``) over
    its own ``Client`` (``speech``: chunk joining and ``encode_audio``) and the S2-Pro pipeline's own preprocessing
    stage (``create_preprocessing_executor``: the ``references`` it reads and ``_encode_reference_audio``, which
    loads the path with torchaudio and resamples to the codec's rate). Stubbed: the coordinator (it runs the
    preprocessing executor, then a stub engine + vocoder), the DAC codec's ``encode``, the text tokenizer and the
    prompt builder, and ``engine_io`` (its import pulls in ``sglang``, the GPU runtime)."""
    import asyncio
    import hashlib

    import numpy as np
    import torch

    sample_rate = 44100  # the S2-Pro DAC codec's rate
    sys.path.insert(0, str(checkout))
    engine_io = types.ModuleType("sglang_omni.models.fishaudio_s2_pro.pipeline.engine_io")
    engine_io.apply_tts_result = engine_io.build_sglang_tts_request = None  # the engine stage's: never called here
    sys.modules[engine_io.__name__] = engine_io
    from sglang_omni.client import Client
    from sglang_omni.models.fishaudio_s2_pro import tokenizer as s2_tokenizer
    from sglang_omni.models.fishaudio_s2_pro.pipeline import stages
    from sglang_omni.models.fishaudio_s2_pro.pipeline.state_io import load_state
    from sglang_omni.proto import StagePayload
    from sglang_omni.serve.openai_api import create_app

    class StubCodec:  # the DAC codec: encode() reports what it was given in the codes it returns
        def __init__(self):
            self.sample_rate = sample_rate

        def encode(self, audios, audio_lengths):
            codes = torch.zeros(10, 8, dtype=torch.long)
            codes[0, :5] = torch.tensor([audios.shape[0], audios.shape[1], int(audio_lengths[0]),
                                         round(float(audios.abs().sum()) * 1000), int(audios.dtype == torch.float32)])
            return codes[None], None

    class StubTokenizer:
        @classmethod
        def from_pretrained(cls, path):
            return cls()

    class StubAdapter:  # S2ProTokenizerAdapter: the "prompt" carries the text and reference transcripts as bytes
        def __init__(self, tokenizer):
            self.tokenizer = tokenizer

        def build_prompt(self, text, references=None, *, num_codebooks=10, **kwargs):
            refs = references or []
            carried = json.dumps({"text": text, "reference_texts": [r.text for r in refs]}).encode("utf-8")
            return {"input_ids": list(carried), "vq_mask_tokens": [False] * len(carried),
                    "vq_parts": [r.vq_codes for r in refs]}

    checkpoint = Path(record.path).parent / "s2pro_checkpoint"  # a folder: _resolve_checkpoint downloads nothing
    checkpoint.mkdir(exist_ok=True)
    stages._load_codec = lambda checkpoint_dir, device: StubCodec()
    stages_transformers = sys.modules["transformers"]
    real_tokenizer = stages_transformers.PreTrainedTokenizerFast
    stages_transformers.PreTrainedTokenizerFast = StubTokenizer
    s2_tokenizer.S2ProTokenizerAdapter = StubAdapter
    try:
        preprocessing = stages.create_preprocessing_executor(str(checkpoint))  # upstream's _preprocess closure
    finally:
        stages_transformers.PreTrainedTokenizerFast = real_tokenizer

    class StubCoordinator:  # pipeline.coordinator.Coordinator: preprocessing (upstream's), engine + vocoder stubbed
        def __init__(self):
            self.lock = asyncio.Lock()

        def health(self):
            return {"running": True, "stages": ["preprocessing", "tts_engine", "vocoder"],
                    "entry_stage": "preprocessing"}

        async def submit(self, request_id, request):
            refs = request.inputs.get("references", []) if isinstance(request.inputs, dict) else []
            staged = [{"audio_path": r.get("audio_path"),
                       "sha256": hashlib.sha256(Path(r["audio_path"]).read_bytes()).hexdigest()
                       if r.get("audio_path") and os.path.exists(r["audio_path"]) else None} for r in refs]
            async with self.lock:  # one request at a time through the executor's result queue
                await preprocessing.add_request(StagePayload(request_id=request_id, request=request, data=None))
                payload = await preprocessing.get_result()
            state = load_state(payload)
            prompt = json.loads(bytes(state.input_ids).decode("utf-8"))
            tone = stub_tone(prompt["text"], sample_rate)
            tts_params = request.metadata.get("tts_params", {})
            record(route="speech", text=prompt["text"], reference_texts=prompt["reference_texts"], staged=staged,
                   reference_codes=[[int(v) for v in torch.as_tensor(p)[0, :5]] for p in state.vq_parts or []],
                   seed=tts_params.get("seed"), sampling_seed=request.params.get("seed"),
                   response_format=tts_params.get("response_format"),
                   sampling={k: getattr(state, k) for k in ("temperature", "top_p", "top_k", "repetition_penalty",
                                                             "max_new_tokens")},
                   answer_samples=int(tone.shape[0]))
            data = state.to_dict()  # what the vocoder stage completes with (create_vocoder_executor's _vocode)
            data.update(audio_data=tone.astype(np.float32).tolist(), sample_rate=sample_rate, modality="audio")
            return data

    return create_app(Client(StubCoordinator()), model_name="fishaudio/s2-pro")


LAUNCHERS = {"cosyvoice": serve_cosyvoice, "gpt_sovits": serve_gpt_sovits, "zonos2": serve_zonos2,
             "sglang_omni": serve_sglang_omni}


def launch(server: str, checkout: Path, port: int, record_path: str) -> None:
    import uvicorn

    app = LAUNCHERS[server](checkout.resolve(), Recorder(str(Path(record_path).resolve())), port)
    if app is not None:  # None: the upstream served its app itself
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


# --- the driver: clonebench's side ----------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_listening(launcher: subprocess.Popen, port: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if launcher.poll() is not None:
            raise SystemExit(f"the upstream app exited ({launcher.returncode}) before listening; see its traceback")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise SystemExit(f"the upstream app did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


def checkout_commit(checkout: Path) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True,
                             check=False)
    except OSError:
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def web_layer_versions(python: str) -> str:
    code = ("import importlib.metadata as m\nfor n in ('fastapi', 'starlette', 'pydantic', 'uvicorn', "
            "'python-multipart', 'pyzmq', 'msgpack', 'transformers', 'torchaudio', 'torchcodec', 'soundfile'):\n"
            "    try: print(n + '==' + m.version(n), end=' ')\n    except m.PackageNotFoundError: pass")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    return out.stdout.strip() or out.stderr.strip()[-200:]


def audio_frames(path: Path) -> tuple[int, int]:
    import soundfile as sf

    info = sf.info(str(path))
    return info.frames, info.samplerate


def seen_pairs(pairs: list[dict], seen: list[dict], field: str, problems: list[str]):
    """Each pair with the request the stub recorded for its target text (the text under ``field``); a pair the stub
    never saw is a problem."""
    by_text = {event[field]: event for event in seen}
    for pair in pairs:
        event = by_text.get(pair["target_text"])
        if event is None:
            problems.append(f"the stub never saw {field} {pair['target_text']!r}")
        else:
            yield pair, event


def check_fields(pair: dict, event: dict, want: dict, problems: list[str]) -> None:
    """The recorded request carries exactly the wanted values, and a fixed non-negative seed."""
    for key, value in want.items():
        if event.get(key) != value:
            problems.append(f"{pair['pair_id']}: {key} {event.get(key)!r} != {value!r}")
    if not isinstance(event["seed"], int) or event["seed"] < 0:
        problems.append(f"{pair['pair_id']}: seed {event['seed']!r} is not a fixed seed")


def seeds_of(manifest: dict) -> dict:
    return {sample["source_index"]: sample.get("seed") for sample in manifest["samples"]}


def share_emptied(share: Path, problems: list[str]) -> list[str]:
    """The run removed every reference it staged in the share."""
    left = sorted(p.name for p in share.iterdir())
    if left:
        problems.append(f"staged references left in the share after the run: {left}")
    return problems


def check_cosyvoice(pairs: list[dict], data: Path, seen: list[dict], manifest: dict, work: Path) -> list[str]:
    problems = []
    for pair, event in seen_pairs(pairs, seen, "tts_text", problems):
        if event["prompt_text"] != pair["prompt_text"]:
            problems.append(f"prompt_text {event['prompt_text']!r} != {pair['prompt_text']!r}")
        frames, rate = audio_frames(data / pair["prompt_file_name"])
        expected = frames if rate == 16000 else round(frames * 16000 / rate)
        shape = event["prompt_shape"]
        if shape[0] != 1 or abs(shape[1] - expected) > 2 or event["prompt_sum"] <= 0:
            problems.append(f"load_wav gave {shape} (sum {event['prompt_sum']}) for {pair['prompt_file_name']} "
                            f"({frames} frames at {rate} Hz; expected [1, {expected}] at 16 kHz)")
    return problems


def check_gpt_sovits(pairs: list[dict], data: Path, seen: list[dict], manifest: dict, work: Path) -> list[str]:
    from clonebench.core.hashing import sha256_file

    problems = []
    seeds = seeds_of(manifest)
    share = (work / "share").resolve()
    for pair, event in seen_pairs(pairs, seen, "text", problems):
        check_fields(pair, event, {
            "prompt_text": pair["prompt_text"], "text_lang": pair["target_language"].lower(),
            "prompt_lang": pair["prompt_language"].lower(), "seed": seeds.get(pair["source_index"]),
            "ref_sha256": sha256_file(data / pair["prompt_file_name"])}, problems)
        if Path(event["ref_audio_path"]).resolve().parent != share:
            problems.append(f"ref_audio_path {event['ref_audio_path']} is not in the share {share}")
    return share_emptied(share, problems)


def check_zonos2(pairs: list[dict], data: Path, seen: list[dict], manifest: dict, work: Path) -> list[str]:
    from clonebench.adversary.zonos2_http import server_language

    problems = []
    seeds = seeds_of(manifest)
    for pair, event in seen_pairs(pairs, seen, "text", problems):
        check_fields(pair, event, {
            "language": server_language(pair["target_language"]), "seed": seeds.get(pair["source_index"]),
            "text_normalization": True, "accurate_mode": True, "clean_speaker_background": False}, problems)
        frames, rate = audio_frames(data / pair["prompt_file_name"])
        ref = event.get("reference")  # [channels, samples, rate, abs sum, float32] as the stub embedder saw them
        if (event.get("embedding_shape") != [2048] or not ref or ref[0] != 1 or abs(ref[1] - frames) > 2
                or ref[2] != rate or ref[3] <= 0 or ref[4] != 1):
            problems.append(f"{pair['pair_id']}: the embedder saw {ref} (embedding {event.get('embedding_shape')}) "
                            f"for {pair['prompt_file_name']} ({frames} frames at {rate} Hz)")
    return problems


def check_sglang_omni(pairs: list[dict], data: Path, seen: list[dict], manifest: dict, work: Path) -> list[str]:
    from clonebench.core.hashing import sha256_file

    problems = []
    seeds = seeds_of(manifest)
    share = (work / "share").resolve()
    for pair, event in seen_pairs(pairs, seen, "text", problems):
        check_fields(pair, event, {"reference_texts": [pair["prompt_text"]], "seed": seeds.get(pair["source_index"]),
                                   "sampling_seed": None, "response_format": "wav"}, problems)
        clip = sha256_file(data / pair["prompt_file_name"])
        staged = event.get("staged") or [{}]
        if len(staged) != 1 or staged[0].get("sha256") != clip:
            problems.append(f"{pair['pair_id']}: staged reference {staged} is not {pair['prompt_file_name']}")
        elif Path(staged[0]["audio_path"]).resolve().parent != share:
            problems.append(f"{pair['pair_id']}: reference path {staged[0]['audio_path']} is not in the share {share}")
        frames, rate = audio_frames(data / pair["prompt_file_name"])
        expected = round(frames * 44100 / rate)
        codes = (event.get("reference_codes") or [[]])[0]  # [channels, samples, length, abs sum * 1000, float32]
        if (len(event.get("reference_codes") or []) != 1 or len(codes) != 5 or codes[0] != 1
                or abs(codes[1] - expected) > 2 or codes[2] != codes[1] or codes[3] <= 0 or codes[4] != 1):
            problems.append(f"{pair['pair_id']}: the codec encoded {event.get('reference_codes')} for "
                            f"{pair['prompt_file_name']} ({frames} frames at {rate} Hz; expected [1, {expected}] "
                            f"at 44.1 kHz)")
    return share_emptied(share, problems)


CHECKS = {"cosyvoice": check_cosyvoice, "gpt_sovits": check_gpt_sovits, "zonos2": check_zonos2,
          "sglang_omni": check_sglang_omni}
EXPECTED_RATE = {"cosyvoice": 24000, "gpt_sovits": 32000, "zonos2": 44100, "sglang_omni": 44100}
EXTRA = {"gpt_sovits": lambda work: ["adversary.reference_duration_check=false",  # demo clips are 2.3-2.8 s
                                     f"adversary.reference_share.local_dir={work / 'share'}"],
         "sglang_omni": lambda work: [f"adversary.reference_share.local_dir={work / 'share'}"]}


def drive(args) -> int:
    sys.path.insert(0, str(HERE))
    from _standins import run_vc

    from clonebench.data.audio import validate_wav
    from clonebench.demo.dataset import build_demo_dataset

    spec = SERVERS[args.server]
    checkout = Path(args.checkout).resolve()
    commit = checkout_commit(checkout) or args.commit
    if commit and commit != spec["commit"]:
        print(f"warning: checkout is at {commit}, the adapter was written from {spec['commit']}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="real_server_") as tmp:
        work = Path(tmp)
        manifest_path = build_demo_dataset(work / "data")
        data = manifest_path.parent
        pairs = json.loads(manifest_path.read_text())["pairs"][: args.pairs]
        record_path = work / "stub_calls.jsonl"
        port = free_port()
        env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost"}
        launcher = subprocess.Popen([args.python, __file__, "--launch", args.server, "--checkout", str(checkout),
                                     "--port", str(port), "--record", str(record_path)], env=env)
        try:
            wait_listening(launcher, port)
            url = f"http://127.0.0.1:{port}{spec['path']}"
            extra = [f"adversary={spec['adversary']}", f"adversary.endpoint_url={url}", "adversary.ready_timeout=120",
                     "adversary.reference_check=false", f"adversary.max_samples={len(pairs)}",
                     "adversary.request_attempts=1", *EXTRA.get(args.server, lambda w: [])(work), *args.override]
            (work / "share").mkdir()
            result = run_vc(work, manifest_path, *extra)
        finally:
            launcher.terminate()
            launcher.wait(timeout=30)
        run_dir = Path(result["run_dir"])
        manifest = json.loads((run_dir / "run_manifest.json").read_text())
        journal = [json.loads(line) for line in (run_dir / "sample_events.jsonl").read_text().splitlines() if line]
        seen = [json.loads(line) for line in record_path.read_text().splitlines()] if record_path.exists() else []
        problems = []
        attempts = [e for e in journal if e["event"] == "attempt_end" and e.get("purpose") == "sample"]
        if len(attempts) != len(pairs):
            problems.append(f"{len(attempts)} sample attempts for {len(pairs)} pairs")
        for attempt in attempts:
            if attempt.get("status_code") != 200 or attempt.get("outcome") != "ok":
                problems.append(f"attempt {attempt.get('sample_id')}: HTTP {attempt.get('status_code')} "
                                f"{attempt.get('outcome')} {attempt.get('error')}")
        if len(seen) != len(pairs):
            problems.append(f"the stub saw {len(seen)} calls for {len(pairs)} pairs")
        problems += CHECKS[args.server](pairs, data, seen, manifest, work)
        answers = {event.get("tts_text", event.get("text")): event["answer_samples"] for event in seen}
        texts = {pair["source_index"]: pair["target_text"] for pair in pairs}
        for sample in manifest["samples"]:
            if sample.get("status") != "generated" or not sample.get("audio_path"):
                problems.append(f"sample {sample['sample_id']}: {sample.get('status')}")
                continue
            info = validate_wav((run_dir / sample["audio_path"]).read_bytes())
            text = texts.get(sample.get("source_index"), "")
            expected = answers.get(text)
            if info.sample_rate != EXPECTED_RATE[args.server] or info.channels != 1 or info.frames != expected:
                problems.append(f"sample {sample['sample_id']}: {info} (stub answered {expected} samples at "
                                f"{EXPECTED_RATE[args.server]} Hz)")
        print(f"server: {args.server} ({spec['module']}) at {commit or 'unknown commit'}")
        print(f"web layer: {web_layer_versions(args.python)}")
        print(f"pairs: {len(pairs)}; stub calls: {len(seen)}; attempts ok: "
              f"{sum(1 for a in attempts if a.get('outcome') == 'ok')}/{len(attempts)}; "
              f"samples generated: {sum(1 for s in manifest['samples'] if s.get('status') == 'generated')}")
        print(f"seeded: {manifest.get('seeded')}; readiness: {json.dumps(manifest.get('readiness', {}))[:200]}")
        if args.keep:
            import shutil

            shutil.copytree(run_dir, args.keep, dirs_exist_ok=True)
            (Path(args.keep) / "stub_calls.jsonl").write_text(record_path.read_text() if seen else "")
        if problems:
            print("FAILED:\n  " + "\n  ".join(problems))
            return 1
        print("OK: every request accepted by the real request layer; the stub saw the expected fields; WAVs valid")
        return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=sorted(SERVERS))
    parser.add_argument("--checkout", required=True, help="the upstream checkout (at the pinned commit)")
    parser.add_argument("--python", default=sys.executable, help="the Python with the upstream web layer installed")
    parser.add_argument("--pairs", type=int, default=4, help="demo pairs to send (at most 8)")
    parser.add_argument("--commit", help="the checkout's commit when it is not a git work tree (an archive)")
    parser.add_argument("--keep", help="copy the run folder and the stub's record here")
    parser.add_argument("--override", action="append", default=[], help="an extra run_vc.py override")
    parser.add_argument("--launch", choices=sorted(LAUNCHERS), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--record", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.launch:
        launch(args.launch, Path(args.checkout), args.port, args.record)
        return 0
    if not args.server:
        parser.error("--server is required")
    return drive(args)


if __name__ == "__main__":
    sys.exit(main())
