#!/usr/bin/env python
"""clonebench's triton_kserve adapter against a real Triton Inference Server (PyTriton), with the model stubbed.

PyTriton (the PyPI wheel ``nvidia-pytriton``) bundles a real ``tritonserver`` binary and its Python backend, and
serves a Python function as a Triton model on CPU. This binds a model named as the TensorRT-LLM recipe's
(``cosyvoice2`` by default) with the recipe's ``config.pbtxt`` inputs and output (CosyVoice
1850e2a56e9ee1e0b4102bd9358a9cc56a25c03a ``runtime/triton_trtllm/model_repo/cosyvoice2/config.pbtxt``:
``reference_wav`` TYPE_FP32 dims [-1], ``reference_wav_len`` TYPE_INT32 [1], ``reference_text`` and
``target_text`` TYPE_STRING [1], output ``waveform`` TYPE_FP32 [-1], with ``max_batch_size`` and dynamic
batching), on 127.0.0.1, and runs clonebench's real generate phase (``run_vc.py`` with ``adversary=triton_kserve``)
against Triton's own HTTP endpoint on the eSpeak NG demo pairs. The stub records what Triton handed it and answers
a deterministic tone whose length is a function of the target text. It then checks that every request was
accepted first time (HTTP 200, one attempt), that the model saw the pair's reference at 16 kHz with its length,
the reference text and the target text, and that every saved WAV is valid at ``adversary.output_sample_rate``.

It also probes what the real server answers for an unknown model, an unknown version, a wrong input name, a
wrong datatype, a model that raises, a model not ready (unloaded through the repository API) and a decoupled model,
and prints each answer with the adapter's ``describe_error`` classification and the adapter's ``check_ready``
verdict, so the adapter's error handling can be compared with the real server's.

Not run in CI: it needs the wheel in its own venv. The launcher runs with that venv's Python; clonebench's side
runs with this interpreter::

    python -m venv /tmp/pyt && /tmp/pyt/bin/pip install nvidia-pytriton numpy
    python bench/real_triton.py --python /tmp/pyt/bin/python

What is not checked: the recipe's model itself (its TensorRT-LLM engines, sampling and timing), gRPC, and the
recipe's exact ``max_batch_size`` (a build-time variable; any value >= 1 gives the same HTTP shapes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REFERENCE_RATE = 16000
OUTPUT_RATE = {"cosyvoice2": 24000, "f5_tts": 24000, "spark_tts": 16000}
RAISE_MARKER = "__raise__"


# --- the launcher: runs under the PyTriton venv's Python ------------------------------------------------------

def launch(model: str, ports: list[int], record_path: str, batching: bool) -> None:
    import numpy as np
    from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
    from pytriton.triton import Triton, TritonConfig, TritonSecurityConfig

    sys.path.insert(0, str(HERE))
    from real_servers import stub_tone

    rate = OUTPUT_RATE.get(model, 24000)
    # the Python backend stub links libpython3.x.so by soname: without this it may load the system's libpython
    # (Debian 12: 3.11.2) under this interpreter's stdlib (e.g. pyenv 3.11.7), and the model's initialize fails with
    # "AttributeError: '_thread.RLock' object has no attribute '_recursion_count'". Inherited by tritonserver.
    libdir = sysconfig.get_config_var("LIBDIR")
    if libdir:
        os.environ["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [libdir, os.environ.get("LD_LIBRARY_PATH")]))

    def text(array) -> str:
        value = np.asarray(array).reshape(-1)[0]
        return value.decode("utf-8") if isinstance(value, bytes) else str(value)

    def one(request: dict) -> dict:
        wav = np.asarray(request["reference_wav"])
        wav_len = np.asarray(request["reference_wav_len"])
        target = text(request["target_text"])
        with open(record_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({
                "model": model, "reference_wav_shape": list(wav.shape), "reference_wav_dtype": str(wav.dtype),
                "reference_wav_sum": float(np.abs(wav).sum()), "reference_wav_len": wav_len.reshape(-1).tolist(),
                "reference_wav_len_dtype": str(wav_len.dtype), "reference_text": text(request["reference_text"]),
                "target_text": target, "answer_samples": None if RAISE_MARKER in target else
                int(stub_tone(target, rate).shape[0])}) + "\n")
        if RAISE_MARKER in target:
            raise ValueError("the stub model raised on purpose")
        tone = stub_tone(target, rate)
        return {"waveform": tone[None, :]}  # [1, N]: the batch of one (or the full shape unbatched)

    def infer(requests):
        return [one(request) for request in requests]

    def infer_decoupled(requests):
        yield [one(request) for request in requests]

    first_dim = () if batching else (1,)
    inputs = [Tensor(name="reference_wav", dtype=np.float32, shape=(*first_dim, -1)),
              Tensor(name="reference_wav_len", dtype=np.int32, shape=(*first_dim, 1)),
              Tensor(name="reference_text", dtype=bytes, shape=(*first_dim, 1)),
              Tensor(name="target_text", dtype=bytes, shape=(*first_dim, 1))]
    outputs = [Tensor(name="waveform", dtype=np.float32, shape=(*first_dim, -1))]
    config = ModelConfig(batching=batching, max_batch_size=16 if batching else 0,
                         batcher=DynamicBatcher(max_queue_delay_microseconds=0))
    decoupled = ModelConfig(batching=batching, max_batch_size=16 if batching else 0, decoupled=True)
    triton_config = TritonConfig(http_address="127.0.0.1", http_port=ports[0], grpc_address="127.0.0.1",
                                 grpc_port=ports[1], metrics_port=ports[2], allow_metrics=False)
    security = TritonSecurityConfig(access_token=os.environ["REAL_TRITON_TOKEN"])  # the driver's, for /unload
    with Triton(config=triton_config, security_config=security) as triton:
        triton.bind(model, infer, inputs=inputs, outputs=outputs, config=config)
        triton.bind(f"{model}_decoupled", infer_decoupled, inputs=inputs, outputs=outputs, config=decoupled)
        triton.bind(f"{model}_spare", infer, inputs=inputs, outputs=outputs, config=config)  # to unload
        triton.serve()


# --- the driver: clonebench's side ----------------------------------------------------------------------------

def wait_ready(launcher: subprocess.Popen, base: str, models: list[str], timeout: float = 180.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if launcher.poll() is not None:
            raise SystemExit(f"the PyTriton launcher exited ({launcher.returncode}) before the models were ready")
        try:
            if all(httpx.get(f"{base}/v2/models/{m}/ready", timeout=2).status_code == 200 for m in models):
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"the models {models} were not ready at {base} within {timeout:.0f} s")


def pytriton_versions(python: str) -> str:
    code = ("import importlib.metadata as m\nfor n in ('nvidia-pytriton', 'tritonclient', 'numpy'):\n"
            "    try: print(n + '==' + m.version(n), end=' ')\n    except m.PackageNotFoundError: pass")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    return out.stdout.strip() or out.stderr.strip()[-200:]


def adapter(model: str, base: str):
    """A TritonKServe with only the params its readiness check reads (no client: run_vc builds the real one)."""
    from clonebench.adversary.triton_kserve import TritonKServe

    adversary = object.__new__(TritonKServe)
    adversary.params = {"model": model, "model_version": None, "reference_sample_rate": REFERENCE_RATE,
                        "output_sample_rate": OUTPUT_RATE.get(model, 24000), "max_abs": 2.0}
    return adversary, f"{base}/v2/models/{model}/infer"


def check_ready(model: str, base: str) -> str:
    import httpx

    adversary, url = adapter(model, base)

    async def go():
        async with httpx.AsyncClient(timeout=30) as http:
            return await adversary.check_ready(http, url)

    try:
        return f"ready: {json.dumps(asyncio.run(go()))}"
    except Exception as exc:  # noqa: BLE001 - the verdict is what is printed
        return f"{type(exc).__name__} may_recover={getattr(exc, 'may_recover', '?')}: {str(exc)[:260]}"


def probes(model: str, base: str, good_body: bytes, token: str) -> list[dict]:
    """What the real server answers in the cases the adapter classifies."""
    import httpx

    from clonebench.adversary.triton_kserve import describe_error

    body = json.loads(good_body)
    renamed = json.loads(good_body)
    renamed["inputs"][0]["name"] = "reference_audio"
    retyped = json.loads(good_body)
    retyped["inputs"][1]["datatype"] = "FP32"
    raising = json.loads(good_body)
    raising["inputs"][3]["data"] = [RAISE_MARKER]
    cases = [
        ("server metadata", "GET", "/v2", None),
        ("server ready", "GET", "/v2/health/ready", None),
        ("model ready", "GET", f"/v2/models/{model}/ready", None),
        ("unknown model: ready", "GET", "/v2/models/no_such_model/ready", None),
        ("unknown model: metadata", "GET", "/v2/models/no_such_model", None),
        ("unknown model: infer", "POST", "/v2/models/no_such_model/infer", body),
        ("unknown version: ready", "GET", f"/v2/models/{model}/versions/9/ready", None),
        ("unknown version: infer", "POST", f"/v2/models/{model}/versions/9/infer", body),
        ("wrong input name", "POST", f"/v2/models/{model}/infer", renamed),
        ("wrong datatype (reference_wav_len FP32)", "POST", f"/v2/models/{model}/infer", retyped),
        ("the model raises", "POST", f"/v2/models/{model}/infer", raising),
        ("not JSON", "POST", f"/v2/models/{model}/infer", b"not json"),
        ("decoupled: infer over HTTP", "POST", f"/v2/models/{model}_decoupled/infer", body),
        ("unload the spare model", "POST", f"/v2/repository/models/{model}_spare/unload", {}),
        ("not ready (unloaded): ready", "GET", f"/v2/models/{model}_spare/ready", None),
        ("not ready (unloaded): metadata", "GET", f"/v2/models/{model}_spare", None),
        ("not ready (unloaded): infer", "POST", f"/v2/models/{model}_spare/infer", body),
    ]
    answers = []
    with httpx.Client(timeout=60) as http:
        for name, method, path, payload in cases:
            content = payload if isinstance(payload, bytes) else None if payload is None else json.dumps(payload)
            if name.startswith("not ready (unloaded): ready"):
                time.sleep(1.0)  # the unload is asynchronous in explicit mode
            headers = {"Content-Type": "application/json"} if content else {}
            if "/repository/" in path:
                headers["triton-access-token"] = token  # PyTriton restricts the repository API to its token
            response = http.request(method, base + path, content=content, headers=headers)
            answers.append({"case": name, "request": f"{method} {path}", "status": response.status_code,
                            "body": response.text[:300],
                            "adapter": describe_error(response.status_code, response.content)
                            if response.status_code >= 400 else None})
    return answers


def check_calls(pairs: list[dict], data: Path, seen: list[dict]) -> list[str]:
    import soundfile as sf

    problems = []
    by_text = {event["target_text"]: event for event in seen}
    for pair in pairs:
        event = by_text.get(pair["target_text"])
        if event is None:
            problems.append(f"the model never saw target_text {pair['target_text']!r}")
            continue
        if event["reference_text"] != pair["prompt_text"]:
            problems.append(f"reference_text {event['reference_text']!r} != {pair['prompt_text']!r}")
        info = sf.info(str(data / pair["prompt_file_name"]))
        expected = info.frames if info.samplerate == REFERENCE_RATE else \
            round(info.frames * REFERENCE_RATE / info.samplerate)
        shape = event["reference_wav_shape"]
        if shape[0] != 1 or len(shape) != 2 or abs(shape[1] - expected) > 2 or event["reference_wav_sum"] <= 0:
            problems.append(f"reference_wav {shape} (sum {event['reference_wav_sum']}) for "
                            f"{pair['prompt_file_name']} ({info.frames} frames at {info.samplerate} Hz; expected "
                            f"[1, {expected}] at {REFERENCE_RATE} Hz)")
        if event["reference_wav_len"] != [shape[-1]] or event["reference_wav_len_dtype"] != "int32":
            problems.append(f"reference_wav_len {event['reference_wav_len']} ({event['reference_wav_len_dtype']}) "
                            f"for a reference of {shape[-1]} samples")
        if event["reference_wav_dtype"] != "float32":
            problems.append(f"reference_wav dtype {event['reference_wav_dtype']}")
    return problems


def drive(args) -> int:
    sys.path.insert(0, str(HERE))
    import httpx
    from _standins import run_vc
    from real_servers import free_port

    from clonebench.adversary.triton_kserve import TritonKServe
    from clonebench.data.audio import validate_wav
    from clonebench.demo.dataset import build_demo_dataset

    model, rate = args.model, OUTPUT_RATE.get(args.model, 24000)
    with tempfile.TemporaryDirectory(prefix="real_triton_") as tmp:
        work = Path(tmp)
        manifest_path = build_demo_dataset(work / "data")
        data = manifest_path.parent
        pairs = json.loads(manifest_path.read_text())["pairs"][: args.pairs]
        record_path = work / "model_calls.jsonl"
        ports = [free_port(), free_port(), free_port()]
        base = f"http://127.0.0.1:{ports[0]}"
        token = secrets.token_urlsafe(16)  # a throwaway token for this server's restricted repository API
        env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "PYTHONPATH": "", "REAL_TRITON_TOKEN": token}
        launcher = subprocess.Popen([args.python, __file__, "--launch", model, "--ports", *map(str, ports),
                                     "--record", str(record_path), *(["--no-batching"] if args.no_batching else [])],
                                    env=env, start_new_session=True)
        try:
            started = time.monotonic()
            wait_ready(launcher, base, [model, f"{model}_decoupled", f"{model}_spare"])
            print(f"PyTriton up in {time.monotonic() - started:.1f} s at {base}")
            server = httpx.get(f"{base}/v2", timeout=10).json()
            config = httpx.get(f"{base}/v2/models/{model}/config", timeout=10).json()
            metadata = httpx.get(f"{base}/v2/models/{model}", timeout=10).json()
            ready_verdicts = {m: check_ready(m, base) for m in (model, f"{model}_decoupled", "no_such_model")}
            url = f"{base}/v2/models/{model}/infer"
            extra = ["adversary=triton_kserve", f"adversary.model={model}", f"adversary.endpoint_url={url}",
                     f"adversary.output_sample_rate={rate}", "adversary.ready_timeout=60",
                     "adversary.reference_check=false", f"adversary.max_samples={len(pairs)}",
                     "adversary.request_attempts=1", *args.override]
            result = run_vc(work, manifest_path, *extra)
            seen = [json.loads(line) for line in record_path.read_text().splitlines()] if record_path.exists() \
                else []
            good_body = TritonKServe.request_body(adapter(model, base)[0], _first_input(pairs[0], data))
            answers = probes(model, base, good_body, token)
            ready_verdicts[f"{model}_spare (unloaded)"] = check_ready(f"{model}_spare", base)
            ready_verdicts[f"{model} (ready, beside the unloaded one)"] = check_ready(model, base)
        finally:
            launcher.terminate()
            try:
                launcher.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(launcher.pid, 9)
                launcher.wait()
        run_dir = Path(result["run_dir"])
        manifest = json.loads((run_dir / "run_manifest.json").read_text())
        journal = [json.loads(line) for line in (run_dir / "sample_events.jsonl").read_text().splitlines() if line]
        problems = []
        attempts = [e for e in journal if e["event"] == "attempt_end" and e.get("purpose") == "sample"]
        if len(attempts) != len(pairs):
            problems.append(f"{len(attempts)} sample attempts for {len(pairs)} pairs")
        for attempt in attempts:
            if attempt.get("status_code") != 200 or attempt.get("outcome") != "ok":
                problems.append(f"attempt {attempt.get('sample_id')}: HTTP {attempt.get('status_code')} "
                                f"{attempt.get('outcome')} {attempt.get('error')}")
        run_calls = [event for event in seen if event["model"] == model][: len(pairs)]
        if len(run_calls) != len(pairs):
            problems.append(f"the model saw {len(run_calls)} calls for {len(pairs)} pairs")
        problems += check_calls(pairs, data, run_calls)
        answers_len = {event["target_text"]: event["answer_samples"] for event in run_calls}
        texts = {pair["source_index"]: pair["target_text"] for pair in pairs}
        for sample in manifest["samples"]:
            if sample.get("status") != "generated" or not sample.get("audio_path"):
                problems.append(f"sample {sample['sample_id']}: {sample.get('status')}")
                continue
            info = validate_wav((run_dir / sample["audio_path"]).read_bytes())
            expected = answers_len.get(texts.get(sample.get("source_index"), ""))
            if info.sample_rate != rate or info.channels != 1 or info.frames != expected:
                problems.append(f"sample {sample['sample_id']}: {info} (model answered {expected} samples at "
                                f"{rate} Hz)")
        print(f"tritonserver: {server.get('name')} {server.get('version')}; {pytriton_versions(args.python)}")
        print(f"model {model}: max_batch_size {config.get('max_batch_size')}, inputs "
              f"{[(i['name'], i['datatype'], i['shape']) for i in metadata['inputs']]}, outputs "
              f"{[(o['name'], o['datatype'], o['shape']) for o in metadata['outputs']]}")
        print(f"pairs: {len(pairs)}; model calls: {len(run_calls)}; attempts ok: "
              f"{sum(1 for a in attempts if a.get('outcome') == 'ok')}/{len(attempts)}; "
              f"samples generated: {sum(1 for s in manifest['samples'] if s.get('status') == 'generated')}")
        print(f"seeded: {manifest.get('seeded')}; readiness: {json.dumps(manifest.get('readiness', {}))[:300]}")
        print("adapter check_ready:")
        for name, verdict in ready_verdicts.items():
            print(f"  {name}: {verdict}")
        print("probes (status, body, adapter's describe_error):")
        for answer in answers:
            print(f"  {answer['case']}: {answer['request']} -> {answer['status']} {answer['body']!r}")
            if answer["adapter"] is not None or answer["status"] >= 400:
                print(f"      adapter: {answer['adapter']}")
        if args.keep:
            import shutil

            shutil.copytree(run_dir, args.keep, dirs_exist_ok=True)
            (Path(args.keep) / "probes.json").write_text(json.dumps(answers, indent=1))
        if problems:
            print("FAILED:\n  " + "\n  ".join(problems))
            return 1
        print("OK: every request accepted first time by tritonserver; the model saw the expected inputs; WAVs valid")
        return 0


def _first_input(pair: dict, data: Path):
    from clonebench.adversary.base import SynthesisInput

    return SynthesisInput(text=pair["target_text"], language=pair.get("target_language", "EN"),
                          reference_audio=(data / pair["prompt_file_name"]).read_bytes(),
                          reference_text=pair["prompt_text"], seed=None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="/tmp/pyt/bin/python", help="the Python with nvidia-pytriton installed")
    parser.add_argument("--model", default="cosyvoice2", choices=sorted(OUTPUT_RATE))
    parser.add_argument("--pairs", type=int, default=4, help="demo pairs to send (at most 8)")
    parser.add_argument("--no-batching", action="store_true",
                        help="max_batch_size 0, full shapes [1, -1] / [1, 1] (the recipe batches)")
    parser.add_argument("--keep", help="copy the run folder and the probes here")
    parser.add_argument("--override", action="append", default=[], help="an extra run_vc.py override")
    parser.add_argument("--launch", help=argparse.SUPPRESS)
    parser.add_argument("--ports", type=int, nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--record", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.launch:
        launch(args.launch, args.ports, args.record, not args.no_batching)
        return 0
    return drive(args)


if __name__ == "__main__":
    sys.exit(main())
