"""The three real servers as they behave (fish-speech 3dd1f85 and s2.cpp 2c33261, unchanged as of 2026-12-01;
vLLM-Omni before #5406 and after #6553), through the stand-in over loopback HTTP: one table of requests per protocol, and what the harness does about each behaviour
(effective sampling, seed probe, reference durations, busy, service record, mid-stream cuts, repeated 500s,
ignored fields, gate attempts, readiness polling)."""

from __future__ import annotations

import base64
import io
import json
import socket
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile as sf

from clonebench.adversary.s2cpp_http import multipart
from clonebench.core.errors import ConfigError, ResumeError, ServerNotReadyError
from clonebench.core.hashing import sha256_bytes
from clonebench.core.records import RunStatus
from clonebench.standin import running_standin
from clonebench.standin.server import StandinServer
from tests.conftest import REPO, generate_run, journal, load_manifest

OPENAI = ("adversary=openai_speech",)
S2CPP = ("adversary=s2cpp_http",)


@pytest.fixture
def reference(demo_dataset):
    pair = json.loads((demo_dataset / "metadata.json").read_text())["pairs"][0]
    return (demo_dataset / pair["prompt_file_name"]).read_bytes(), pair["prompt_text"]


def tone_wav(seconds: float) -> bytes:
    out = io.BytesIO()
    t = np.arange(int(seconds * 16000)) / 16000
    sf.write(out, (0.3 * np.sin(2 * np.pi * 180 * t)).astype(np.float32), 16000, subtype="PCM_16", format="WAV")
    return out.getvalue()


# --- one table per protocol: request -> what the real server answers ------------------------------------------

def _uri(audio: bytes) -> str:
    return "data:audio/wav;base64," + base64.b64encode(audio).decode()


OPENAI_TABLE = [  # (case, body builder, status, check of the answer)
    ("string seed coerced", lambda a, t: {"input": "Hi.", "ref_audio": _uri(a), "ref_text": t, "seed": "42"}, 200,
     lambda r: r.headers["content-type"] == "audio/wav"),
    ("bad seed", lambda a, t: {"input": "Hi.", "seed": "forty"}, 400, lambda r: r.json()["error"]["param"] == "seed"),
    ("flac", lambda a, t: {"input": "Hi.", "response_format": "flac"}, 200,
     lambda r: r.headers["content-type"] == "audio/flac" and sf.info(io.BytesIO(r.content)).format == "FLAC"),
    ("mp3", lambda a, t: {"input": "Hi.", "response_format": "mp3"}, 200,
     lambda r: r.headers["content-type"] == "audio/mpeg" and len(r.content) > 100),
    ("sample_rate refused for Fish (#6553)", lambda a, t: {"input": "Hi.", "response_format": "opus",
                                                            "sample_rate": 48000}, 400,
     lambda r: r.json()["error"]["param"] == "sample_rate"),
    ("sample_rate null is no sample_rate", lambda a, t: {"input": "Hi.", "sample_rate": None}, 200, lambda r: True),
    ("opus at the 44.1 kHz codec rate", lambda a, t: {"input": "Hi.", "response_format": "opus"}, 500,
     lambda r: "Opus" in r.json()["error"]["message"]),
    ("stream=true answers Server-Sent Events", lambda a, t: {"input": "Hi.", "stream": True}, 200,
     lambda r: r.headers["content-type"] == "text/event-stream" and _sse_audio(r.content)[:4] == b"RIFF"),
    ("stream_format sse alone answers events (#4490)", lambda a, t: {"input": "Hi.", "stream_format": "sse",
                                                                      "response_format": "pcm"}, 200,
     lambda r: r.headers["content-type"] == "text/event-stream" and len(_sse_audio(r.content)) % 2 == 0
     and _sse_audio(r.content)[:4] != b"RIFF" and "x-vllm-omni-input-tokens" not in r.headers),
    ("stream_format audio alone streams the audio", lambda a, t: {"input": "Hi.", "stream_format": "audio",
                                                                  "response_format": "pcm"}, 200,
     lambda r: r.headers["content-type"] == "audio/pcm" and r.headers.get("transfer-encoding") == "chunked"),
    ("stream_format sse needs pcm or wav", lambda a, t: {"input": "Hi.", "stream_format": "sse",
                                                         "response_format": "mp3"}, 400,
     lambda r: r.json()["error"]["param"] == "response_format"),
    ("stream_format audio streams the audio", lambda a, t: {"input": "Hi.", "stream": True, "stream_format": "audio",
                                                            "response_format": "pcm"}, 200,
     lambda r: r.headers["content-type"] == "audio/pcm" and r.headers.get("transfer-encoding") == "chunked"
     and r.content[:4] != b"RIFF" and len(r.content) % 2 == 0),
    ("streaming needs pcm or wav", lambda a, t: {"input": "Hi.", "stream": True, "response_format": "mp3"}, 400,
     lambda r: r.json()["error"]["param"] == "response_format"),
    ("unknown stream_format", lambda a, t: {"input": "Hi.", "stream": True, "stream_format": "ndjson"}, 400,
     lambda r: r.json()["error"]["param"] == "stream_format"),
    ("seed beyond int64 (#6598)", lambda a, t: {"input": "Hi.", "seed": 2 ** 63}, 400,
     lambda r: r.json()["error"]["param"] == "seed"),
    ("seed below int64", lambda a, t: {"input": "Hi.", "seed": -(2 ** 63) - 1}, 400,
     lambda r: r.json()["error"]["param"] == "seed"),
    ("seed at the int64 bound", lambda a, t: {"input": "Hi.", "seed": 2 ** 63 - 1}, 200, lambda r: True),
    ("extra_params temperature not a number", lambda a, t: {"input": "Hi.", "extra_params": {"temperature": "hot"}},
     400, lambda r: r.json()["error"]["param"] == "extra_params"),
    ("aac is not a speech format", lambda a, t: {"input": "Hi.", "response_format": "aac"}, 400,
     lambda r: r.json()["error"]["param"] == "response_format"),
    ("undecodable reference", lambda a, t: {"input": "Hi.", "ref_audio": _uri(b"not audio at all"), "ref_text": t},
     400, lambda r: r.json()["error"]["type"] == "BadRequestError" and r.json()["error"]["param"] == "ref_audio"),
    ("reference below 1 s", lambda a, t: {"input": "Hi.", "ref_audio": _uri(tone_wav(0.5)), "ref_text": t}, 400,
     lambda r: "outside the supported range" in r.json()["error"]["message"]),
    ("reference above 30 s", lambda a, t: {"input": "Hi.", "ref_audio": _uri(tone_wav(31)), "ref_text": t}, 400,
     lambda r: "outside the supported range" in r.json()["error"]["message"]),
    ("extra_params not an object", lambda a, t: {"input": "Hi.", "extra_params": [1]}, 400,
     lambda r: r.json()["error"]["param"] == "extra_params"),
    ("sampling in extra_params", lambda a, t: {"input": "Hi.", "extra_params": {"top_p": 0.8, "top_k": 30}}, 200,
     lambda r: r.headers["content-type"] == "audio/wav"),
    ("unknown top-level field dropped", lambda a, t: {"input": "Hi.", "top_p": "not even a number"}, 200,
     lambda r: True),
]


def _sse_audio(body: bytes) -> bytes:
    """The audio of vLLM-Omni's events, checked against upstream's shape (docs/serving/speech_api.md at 078de2d1,
    tests/entrypoints/openai/test_serving_speech.py at 5eba539f): an ``event:`` line naming each JSON ``data:`` line's
    type, deltas with ``response_format``, ``speech.audio.done`` with ``usage`` last, no ``[DONE]``."""
    blocks = [block.split(b"\n") for block in body.split(b"\n\n") if block]
    assert all(len(b) == 2 and b[0].startswith(b"event: ") and b[1].startswith(b"data: ") for b in blocks), body[:200]
    events = [json.loads(data[len(b"data: "):]) for _, data in blocks]
    assert [name[len(b"event: "):].decode() for name, _ in blocks] == [e["type"] for e in events]
    assert events[-1]["type"] == "speech.audio.done" and events[-1]["usage"]["total_tokens"] > 0
    deltas = [e for e in events[:-1] if e["type"] == "speech.audio.delta"]
    assert len(deltas) == len(events) - 1 and {e["response_format"] for e in deltas} in ({"pcm"}, {"wav"})
    return b"".join(base64.b64decode(e["audio"]) for e in deltas)


@pytest.mark.parametrize("case, build, status, check", OPENAI_TABLE, ids=[c[0] for c in OPENAI_TABLE])
def test_openai_table(reference, case, build, status, check):
    audio, text = reference
    with running_standin(protocol="openai", max_lifetime=120) as server:
        answer = httpx.post(f"{server.url}/v1/audio/speech", content=json.dumps(build(audio, text)).encode(),
                            headers={"Content-Type": "application/json"}, timeout=60)
    assert answer.status_code == status, answer.text[:300]
    assert check(answer)


OPENAI_BEFORE_5406 = [  # the same requests to a build before #5406 (e.g. 01bc417)
    ("sample_rate is not a field: dropped", {"input": "Hi.", "sample_rate": 48000}, 200,
     lambda r: sf.info(io.BytesIO(r.content)).samplerate == 44100),
    ("so opus still fails at 44.1 kHz", {"input": "Hi.", "response_format": "opus", "sample_rate": 48000}, 500,
     lambda r: "Opus" in r.json()["error"]["message"]),
    ("no int64 bound on seeds", {"input": "Hi.", "seed": 2 ** 64}, 200, lambda r: True),
    ("stream=true answers Server-Sent Events", {"input": "Hi.", "stream": True}, 200,
     lambda r: r.headers["content-type"] == "text/event-stream"),
]


@pytest.mark.parametrize("case, body, status, check", OPENAI_BEFORE_5406, ids=[c[0] for c in OPENAI_BEFORE_5406])
def test_openai_before_5406_table(case, body, status, check):
    with running_standin(protocol="openai", max_lifetime=120, vllm_build="before-5406") as server:
        answer = httpx.post(f"{server.url}/v1/audio/speech", content=json.dumps(body).encode(),
                            headers={"Content-Type": "application/json"}, timeout=60)
    assert answer.status_code == status, answer.text[:300]
    assert check(answer)


@pytest.mark.parametrize("build, temperature_applies", [("before-5406", False), ("after-6553", True)])
def test_which_extra_params_change_the_audio_depends_on_the_build(reference, build, temperature_applies):
    """Same seed, one sampling field changed: the audio changes only where the build applies it (repetition_penalty
    never reaches the slow AR)."""
    audio, text = reference
    base = {"input": "Hi there.", "ref_audio": _uri(audio), "ref_text": text, "seed": 7,
            "extra_params": {"temperature": 0.8, "top_p": 0.8, "top_k": 30, "repetition_penalty": 1.0}}
    with running_standin(protocol="openai", max_lifetime=120, vllm_build=build) as server:
        def send(**extra):
            body = {**base, "extra_params": {**base["extra_params"], **extra}}
            answer = httpx.post(f"{server.url}/v1/audio/speech", content=json.dumps(body).encode(),
                                headers={"Content-Type": "application/json"}, timeout=60)
            assert answer.status_code == 200, answer.text[:300]
            return answer.content
        first = send()
        assert send() == first  # seeded: identical
        assert (send(temperature=0.5) != first) is temperature_applies
        assert (send(top_k=10) != first) is temperature_applies
        assert send(repetition_penalty=1.3) == first


S2CPP_TABLE = [  # (case, multipart fields, status, check)
    ("empty text is synthesized", [("text", "", None, None)], 200,
     lambda r: sf.info(io.BytesIO(r.content)).subtype == "FLOAT"),
    ("no text", [("params", "{}", None, None)], 400, lambda r: r.json() == {"error": "No text field in multipart form"}),
    ("params not JSON", [("text", "Hi.", None, None), ("params", "{oops", None, None)], 400,
     lambda r: r.json() == {"error": "JSON parse error"}),
    ("params not an object", [("text", "Hi.", None, None), ("params", "[1]", None, None)], 400,
     lambda r: r.json() == {"error": "Params JSON must be an object"}),
    ("max_new_tokens a string", [("text", "Hi.", None, None), ("params", '{"max_new_tokens": "9"}', None, None)], 400,
     lambda r: r.json()["error"].startswith("Invalid params JSON: ") and "must be number, but is string" in r.text),
    ("stream a number", [("text", "Hi.", None, None), ("params", '{"stream": 1}', None, None)], 400,
     lambda r: "must be boolean, but is number" in r.json()["error"]),
    ("temperature an int is a number", [("text", "Hi.", None, None), ("params", '{"temperature": 1}', None, None)],
     200, lambda r: True),
    ("unknown params key ignored", [("text", "Hi.", None, None), ("params", '{"whatever": [1]}', None, None)], 200,
     lambda r: True),
    ("undecodable reference ignored", [("text", "Hi.", None, None), ("reference", b"junk", "r.wav", None),
                                       ("reference_text", "words", None, None)], 200, lambda r: True),
]


@pytest.mark.parametrize("case, fields, status, check", S2CPP_TABLE, ids=[c[0] for c in S2CPP_TABLE])
def test_s2cpp_table(case, fields, status, check):
    with running_standin(protocol="s2cpp", max_lifetime=120) as server:
        content, content_type = multipart(fields)
        answer = httpx.post(f"{server.url}/generate", content=content, headers={"Content-Type": content_type},
                            timeout=60)
    assert answer.status_code == status, answer.text[:300]
    assert check(answer)


FISH_TABLE = [  # (case, JSON body, status, check)
    ("normalize accepted", {"text": "Hi.", "normalize": False}, 200, lambda r: r.headers["content-type"] == "audio/wav"),
    ("string seed coerced", {"text": "Hi.", "seed": "42"}, 200, lambda r: True),
    ("strict float top_p", {"text": "Hi.", "top_p": "0.8"}, 422, lambda r: r.json()[0]["loc"] == ["body", "top_p"]),
    ("flac is not a Fish format", {"text": "Hi.", "format": "flac"}, 422, lambda r: r.json()[0]["type"] == "literal_error"),
    ("non-streaming pcm fails", {"text": "Hi.", "format": "pcm"}, 500,
     lambda r: r.json() == {"statusCode": 500, "message": "Failed to generate speech", "error": "Internal Server Error"}),
    ("streaming is headerless PCM", {"text": "Hi.", "streaming": True}, 200,
     lambda r: r.content[:4] != b"RIFF" and len(r.content) % 2 == 0),
]


@pytest.mark.parametrize("case, body, status, check", FISH_TABLE, ids=[c[0] for c in FISH_TABLE])
def test_fish_table(case, body, status, check):
    with running_standin(protocol="fish", max_lifetime=120) as server:
        answer = httpx.post(f"{server.url}/v1/tts", content=json.dumps(body).encode(),
                            headers={"Content-Type": "application/json"}, timeout=60)
    assert answer.status_code == status, answer.text[:300]
    assert check(answer)


# --- row 1: effective sampling ---------------------------------------------------------------------------------

def test_openai_sampling_is_sent_in_extra_params_and_recorded(tmp_path, dataset):
    """Without a service record the server's build is unknown: effective sampling says what was sent and that
    whether it applies is unknown (repetition_penalty never applies)."""
    with running_standin(protocol="openai", max_lifetime=300) as server:
        status, run_dir = generate_run(tmp_path, dataset, server.url, *OPENAI, "adversary.max_samples=1",
                                       "adversary.reference_check=false", "adversary.top_p=0.7",
                                       path="/v1/audio/speech")
    assert status == RunStatus.GENERATED
    manifest = load_manifest(run_dir)
    unknown = "sent; applied only since #5406 (server build unknown)"
    expected = {"temperature": f"0.8 {unknown}", "top_p": f"0.7 {unknown}", "top_k": f"30 {unknown}",
                "repetition_penalty": "the server's deploy config (stage 0), not settable per request",
                "max_new_tokens": 2048, "server_build": "unknown (no service record from scripts/serve_vllm_omni.py)"}
    assert manifest["effective_sampling"] == expected
    assert manifest["generation_fingerprint_fields"]["effective_sampling"] == expected
    from omegaconf import OmegaConf

    from clonebench.adversary.base import SynthesisInput
    from clonebench.adversary.openai_speech import OpenAISpeech
    from clonebench.config.settings import read_settings

    settings = read_settings(OmegaConf.create(manifest["config"]), "manifest")
    body = json.loads(OpenAISpeech(settings.client, settings.adversary_params).prepare(
        SynthesisInput("Hi.", "en", b"RIFF", "words", 3)).content)
    assert body["extra_params"] == {"temperature": 0.8, "top_p": 0.7, "top_k": 30, "repetition_penalty": 1.0}
    assert "top_p" not in body  # a top-level sampling field would be dropped by the server


def _vllm_record(tmp_path, build: str) -> Path:
    """A service record written by scripts/serve_vllm_omni.py (its server command: a fake that exits at once)."""
    import subprocess
    import sys

    fake = tmp_path / f"fake-vllm-{build}"
    fake.write_text(f"#!{sys.executable}\nprint('SERVER UP')\n")
    fake.chmod(0o755)
    record = tmp_path / f"vllm_{build}.json"
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "serve_vllm_omni.py"), "--record", str(record),
                             "--build", build, "--", str(fake), "serve", "fishaudio/s2-pro", "--omni", "--port", "8000"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "SERVER UP" in result.stdout, result.stderr
    return record


@pytest.mark.parametrize("build, server", [("after-5406", "after-6553"), ("before-5406", "before-5406")])
def test_effective_sampling_follows_the_recorded_server_build(tmp_path, dataset, build, server):
    from clonebench.report.compatibility import differences
    from clonebench.report.tables import ResultTable

    record = _vllm_record(tmp_path, build)
    with running_standin(protocol="openai", max_lifetime=300, vllm_build=server) as standin:
        status, run_dir = generate_run(tmp_path, dataset, standin.url, *OPENAI, "adversary.max_samples=1",
                                       "adversary.reference_check=false", "adversary.top_p=0.7",
                                       "adversary.repetition_penalty=1.2", f"adversary.service_record={record}",
                                       path="/v1/audio/speech")
    assert status == RunStatus.GENERATED
    manifest = load_manifest(run_dir)
    deploy = "the server's deploy config (stage 0), not settable per request"
    sent = {"temperature": 0.8, "top_p": 0.7, "top_k": 30} if build == "after-5406" else \
        {"temperature": deploy, "top_p": deploy, "top_k": deploy}
    assert manifest["effective_sampling"] == {**sent, "repetition_penalty": deploy, "max_new_tokens": 2048,
                                              "server_build": f"{build.split('-')[0]} #5406"}
    assert manifest["generation_provenance"]["service_record"]["build"]["source"] == f"stated: --build {build}"
    if build == "before-5406":  # the same sampling sent to two builds is not the same sampling applied
        table = lambda sampling: ResultTable(label="x", rows=[], status="complete", generation_status="generated",  # noqa: E731
                                             seed_policy="per_sample_seed", seed=42, seed_honoured=True,
                                             input_fingerprint="f" * 64, effective_sampling=sampling)
        after = {"temperature": 0.8, "top_p": 0.7, "top_k": 30, "repetition_penalty": deploy, "max_new_tokens": 2048,
                 "server_build": "after #5406"}
        (line,) = differences(table(manifest["effective_sampling"]), table(after))
        assert "server_build 'before #5406' vs 'after #5406'" in line and "top_p" in line


# --- row 2: the determinism probe --------------------------------------------------------------------------------

@pytest.mark.parametrize("ignore_seed", [False, True])
def test_the_gate_probes_whether_the_seed_is_honoured(tmp_path, dataset, ignore_seed, capsys):
    from argparse import Namespace

    from clonebench.cli import repeat

    with running_standin(protocol="openai", max_lifetime=300, ignore_seed=ignore_seed) as server:
        status, run_dir = generate_run(tmp_path, dataset, server.url, *OPENAI, "adversary.max_samples=4",
                                       path="/v1/audio/speech")
        capsys.readouterr()
        repeat.run(Namespace(run_dir=run_dir, count=1, repeats=1, endpoint=None, output=tmp_path / "repeat.json"))
    said = capsys.readouterr().out
    assert json.loads((tmp_path / "repeat.json").read_text())["seeded"] is (not ignore_seed)
    assert ("no seed: the server did not honour the seed" in said) is ignore_seed
    assert status == RunStatus.GENERATED
    manifest = load_manifest(run_dir)
    assert manifest["seed_honoured"] is (not ignore_seed)
    check = manifest["reference_check"]
    assert check["status"] == "passed" and check["determinism_probe"]["seed_honoured"] is (not ignore_seed)
    assert check["method"] == ("voice distance (no seed)" if ignore_seed else "byte comparison (seeded)")
    probes = [e for e in journal(run_dir) if e["event"] == "attempt_end" and e["purpose"] == "determinism_probe"]
    assert len(probes) == (3 if ignore_seed else 2)


# --- row 3: reference durations, checked before any request ------------------------------------------------------

def test_a_reference_outside_1_to_30_s_is_refused_before_any_request(tmp_path, dataset):
    metadata = json.loads((dataset / "metadata.json").read_text())
    pair = metadata["pairs"][1]
    short = tone_wav(0.6)
    (dataset / pair["prompt_file_name"]).write_bytes(short)
    pair["prompt_sha256"] = sha256_bytes(short)
    (dataset / "metadata.json").write_text(json.dumps(metadata))
    with running_standin(protocol="openai", max_lifetime=300) as server:
        with pytest.raises(ConfigError, match=rf"{pair['pair_id']}: reference .* 0\.60 s is shorter than 1 s") as err:
            generate_run(tmp_path, dataset, server.url, *OPENAI, path="/v1/audio/speech")
        assert "1-30 s" in str(err.value)
        assert server.received == []  # not even the readiness probe's synthesis
        status, _ = generate_run(tmp_path / "off", dataset, server.url, *OPENAI, "adversary.max_samples=1",
                                 "adversary.reference_check=false", "adversary.reference_duration_check=false",
                                 path="/v1/audio/speech")
    assert status == RunStatus.GENERATED  # the first pair's reference is fine; the check can be switched off


# --- rows 5, 8: service record, ignored fields and resume --------------------------------------------------------

def test_the_service_record_is_in_provenance_and_fingerprint(tmp_path, dataset):
    import importlib
    import sys

    sys.path.insert(0, str(REPO / "scripts"))
    service_record = importlib.import_module("service_record")
    record = tmp_path / "s2cpp_service.json"
    service_record.write_record(record, {"server": "s2cpp", "protocol": "s2cpp_http", "command": ["s2", "--server"],
                                         "fingerprint": {"binary_sha256": "ab" * 32, "normalize": False}})
    with running_standin(protocol="s2cpp", max_lifetime=300) as server:
        status, run_dir = generate_run(tmp_path, dataset, server.url, *S2CPP, "adversary.max_samples=4",
                                       f"adversary.service_record={record}", path="/generate")
        assert status == RunStatus.GENERATED
        manifest = load_manifest(run_dir)
        assert manifest["generation_provenance"]["service_record"]["command"] == ["s2", "--server"]
        assert manifest["generation_fingerprint_fields"]["service_record"]["normalize"] is False
        service_record.write_record(record, {"server": "s2cpp", "protocol": "s2cpp_http", "command": ["s2"],
                                             "fingerprint": {"binary_sha256": "ab" * 32, "normalize": True}})
        with pytest.raises(ResumeError, match="service_record"):
            generate_run(tmp_path / "again", dataset, server.url, *S2CPP, "adversary.max_samples=4",
                         f"adversary.service_record={record}", f"vc.resume_from={run_dir}", path="/generate")
    with pytest.raises(ConfigError, match="adversary.service_record=.*'s2cpp_http' server"):
        generate_run(tmp_path / "fish", dataset, "http://127.0.0.1:9", f"adversary.service_record={record}")


def test_a_field_the_server_ignores_does_not_block_resume(tmp_path, dataset, standin):
    common = ("adversary.max_samples=2", "adversary.reference_check=false")
    status, first = generate_run(tmp_path, dataset, standin.url, *common, "adversary.normalize=true")
    assert status == RunStatus.GENERATED
    status, second = generate_run(tmp_path, dataset, standin.url, *common, "adversary.normalize=false",
                                  "adversary.repetition_penalty=1.3", f"vc.resume_from={first}",
                                  run_dir=tmp_path / "results" / "second")
    manifest = load_manifest(second)
    assert status == RunStatus.GENERATED and manifest["resumed_from"]["reused"] == 2
    assert manifest["generation_provenance"]["request"]["normalize"] is False  # still recorded
    assert manifest["ignored_request_fields"] == ["normalize", "repetition_penalty"]
    with pytest.raises(ResumeError, match="top_p"):  # a field that takes effect still blocks
        generate_run(tmp_path, dataset, standin.url, *common, "adversary.top_p=0.5", f"vc.resume_from={first}",
                     run_dir=tmp_path / "results" / "third")


# --- rows 6, 7: a stream cut after 200; a repeated identical 500 ------------------------------------------------

def test_a_stream_cut_after_200_keeps_the_status_and_partial_body(tmp_path, dataset, standin):
    standin.faults.add([{"kind": "truncate"}])
    status, run_dir = generate_run(tmp_path, dataset, standin.url, "adversary.max_samples=2",
                                   "adversary.reference_check=false", "adversary.measure=ttfb",
                                   "adversary.request_attempts=1")
    assert status == RunStatus.PARTIAL
    first = load_manifest(run_dir)["samples"][0]["sample_id"]
    end = next(e for e in journal(run_dir) if e["event"] == "attempt_end" and e["sample_id"] == first)
    assert end["outcome"] == "unknown_outcome" and end["status_code"] == 200
    assert end["response_bytes"] > 0 and len(end["response_sha256"]) == 64
    assert "failed after starting the stream" in end["error"] and f"after {end['response_bytes']} bytes" in end["error"]


def test_a_vllm_omni_error_event_after_200_fails_the_sample_with_its_message(tmp_path, dataset):
    """vLLM-Omni sends ``speech.audio.error`` instead of ``speech.audio.done`` when generation fails after the 200
    (test_serving_speech.py ``test_sse_emits_error_event_on_generator_failure`` at 5eba539f): the stand-in's
    truncate fault on an event stream."""
    with running_standin(protocol="openai", max_lifetime=120) as server:
        server.faults.add([{"kind": "truncate"}])
        status, run_dir = generate_run(tmp_path, dataset, server.url, *OPENAI, "adversary.max_samples=2",
                                       "adversary.reference_check=false", "adversary.measure=ttfb",
                                       "adversary.stream_format=sse", "adversary.request_attempts=1",
                                       path="/v1/audio/speech")
    assert status == RunStatus.PARTIAL
    first = load_manifest(run_dir)["samples"][0]["sample_id"]
    end = next(e for e in journal(run_dir) if e["event"] == "attempt_end" and e["sample_id"] == first)
    assert end["status_code"] == 200 and end["outcome"] == "permanent", end  # a 2xx that is no WAV
    assert "speech.audio.error: 'Speech generation failed: injected fault'" in end["error"], end["error"]


def test_a_repeated_identical_500_stops_early_as_permanent(tmp_path, dataset, standin):
    standin.faults.add([{"kind": "status", "code": 500, "message": "No audio generated, please check the input text.",
                         "times": 3}])
    status, run_dir = generate_run(tmp_path, dataset, standin.url, "adversary.max_samples=2",
                                   "adversary.reference_check=false", "adversary.request_attempts=3")
    assert status == RunStatus.PARTIAL
    first = load_manifest(run_dir)["samples"][0]["sample_id"]
    ends = [e for e in journal(run_dir) if e["event"] == "attempt_end" and e["sample_id"] == first]
    assert [e["outcome"] for e in ends] == ["transient", "permanent"]
    assert "stopped early: the same HTTP 500 error as the previous attempt" in ends[-1]["error"]


def test_s2cpp_busy_longer_than_the_timeout_spends_the_attempt(tmp_path, dataset):
    with running_standin(protocol="s2cpp", max_lifetime=300) as server:
        server.faults.add([{"kind": "none", "times": 3}])  # the mandatory gate's three requests
        server.faults.set_sticky({"kind": "status", "code": 503, "message": "Server busy processing another "
                                  "synthesis request."})
        status, run_dir = generate_run(tmp_path, dataset, server.url, *S2CPP, "adversary.max_samples=4",
                                       "adversary.timeout=0.6", "adversary.request_attempts=2", path="/generate")
    assert status == RunStatus.FAILED
    first = load_manifest(run_dir)["samples"][0]["sample_id"]
    ends = [e for e in journal(run_dir) if e["event"] == "attempt_end" and e["sample_id"] == first
            and e["purpose"] == "sample"]
    assert [e["outcome"] for e in ends] == ["transient", "transient"]
    assert all("above the 0.6 s allowed per attempt" in e["error"] for e in ends)


# --- row 10: gate attempts apart --------------------------------------------------------------------------------

def test_status_counts_gate_attempts_apart_from_samples(tmp_path, dataset, standin):
    from clonebench.runs.status import summarise

    status, run_dir = generate_run(tmp_path, dataset, standin.url, "adversary.max_samples=2")
    assert status == RunStatus.GENERATED
    summary = summarise(run_dir)
    assert summary["attempts"] == 2 == sum(s["attempts"] for s in load_manifest(run_dir)["samples"])
    assert summary["gate_attempts"] == {"determinism_probe": 2, "reference_check": 1}


# --- row 11: readiness polling -------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_server_that_starts_late_is_waited_for(tmp_path, dataset, caplog):
    port = _free_port()
    started = {}

    def start_later():
        time.sleep(1.5)
        server = StandinServer(("127.0.0.1", port))
        started["server"] = server
        threading.Timer(120, server.shutdown).start()
        server.serve_forever(poll_interval=0.05)

    threading.Thread(target=start_later, daemon=True).start()
    try:
        status, run_dir = generate_run(tmp_path, dataset, f"http://127.0.0.1:{port}", "adversary.max_samples=1",
                                       "adversary.reference_check=false", "adversary.ready_timeout=30")
    finally:
        while "server" not in started:
            time.sleep(0.05)
        started["server"].shutdown()
        started["server"].server_close()
    assert status == RunStatus.GENERATED
    assert any("waiting for 1 endpoint(s) to become ready" in r.message for r in caplog.records)


def test_a_server_that_never_comes_up_fails_with_its_last_answer(tmp_path, dataset):
    port = _free_port()
    began = time.monotonic()
    with pytest.raises(ServerNotReadyError, match=r"ConnectError.*still not ready after \d+ s of polling"):
        generate_run(tmp_path, dataset, f"http://127.0.0.1:{port}", "adversary.ready_timeout=1.5")
    assert time.monotonic() - began >= 1.5
