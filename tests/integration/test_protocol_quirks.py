"""s2.cpp and OpenAI-speech quirks, on the stand-in and through the adversaries over real loopback HTTP."""

from __future__ import annotations

import base64
import json

import httpx
import pytest

from clonebench.adversary.s2cpp_http import multipart
from clonebench.core.records import RunStatus
from clonebench.data.audio import validate_wav
from clonebench.standin import running_standin
from tests.conftest import generate_run, journal, load_manifest


@pytest.fixture
def reference(demo_dataset):
    pair = json.loads((demo_dataset / "metadata.json").read_text())["pairs"][0]
    return (demo_dataset / pair["prompt_file_name"]).read_bytes(), pair["prompt_text"]


def post_generate(server, fields):
    content, content_type = multipart(fields)
    return httpx.post(f"{server.url}/generate", content=content, headers={"Content-Type": content_type}, timeout=60)


def test_s2cpp_answers_a_float_wav_and_quirks(reference):
    audio, text = reference
    with running_standin(protocol="s2cpp", max_lifetime=120) as server:
        ok = post_generate(server, [("text", "Hello.", None, None), ("reference", audio, "r.wav", "audio/wav"),
                                    ("reference_text", text, None, None), ("params", '{"top_k": 30}', None, None)])
        assert ok.status_code == 200 and ok.headers["content-length"] == str(len(ok.content))
        assert ok.headers["content-disposition"] == 'attachment; filename="generated_audio.wav"'
        assert validate_wav(ok.content).subtype == "FLOAT"  # format tag 3, which Python's wave module cannot read
        probe = post_generate(server, [("params", "{}", None, None)])
        assert probe.status_code == 400 and "error" in probe.json()
        no_transcript = post_generate(server, [("text", "Hi.", None, None), ("reference", audio, "r.wav", None)])
        assert no_transcript.status_code == 400 and no_transcript.headers["content-type"] == "text/plain"
        bad_params = post_generate(server, [("text", "Hi.", None, None), ("params", "[1]", None, None)])
        assert bad_params.status_code == 400 and bad_params.json() == {"error": "Params JSON must be an object"}
        undecodable = post_generate(server, [("text", "Hi.", None, None), ("reference", b"junk", "r.wav", None),
                                             ("reference_text", "words", None, None)])
        assert undecodable.status_code == 200  # ignored: an uncloned voice, as s2.cpp does
        elsewhere = httpx.get(f"{server.url}/v1/health")
        assert elsewhere.status_code == 404 and elsewhere.content == b""


def test_s2cpp_busy_is_waited_for_without_spending_attempts(tmp_path, dataset):
    with running_standin(protocol="s2cpp", latency=0.4, serial=True, max_lifetime=300) as server:
        status, run_dir = generate_run(tmp_path, dataset, server.url, "adversary=s2cpp_http", "adversary.concurrency=4",
                                       "adversary.max_samples=8", "adversary.retry_initial_delay=0.05",
                                       "adversary.request_attempts=1", path="/generate")
    events = journal(run_dir)
    ends = [e for e in events if e["event"] == "attempt_end" and e["purpose"] == "sample"]
    assert status == RunStatus.GENERATED  # one attempt each, and every sample generated
    assert len(ends) == 8 and all(e["outcome"] == "ok" and e["attempt"] == 1 for e in ends)
    busy = [e for e in events if e["event"] == "server_busy"]
    assert busy and all(e["status_code"] == 503 and e["purpose"] == "sample" for e in busy)  # waited, resent
    manifest = load_manifest(run_dir)
    assert manifest["seed_policy"] == "not_supported" and all(s["seed"] is None for s in manifest["samples"])
    assert manifest["reference_check"]["method"] == "voice distance (no seed)"


def test_openai_speech_quirks(reference):
    audio, text = reference
    uri = "data:audio/wav;base64," + base64.b64encode(audio).decode()
    with running_standin(protocol="openai", max_lifetime=120) as server:
        def speech(body, content_type="application/json"):
            return httpx.post(f"{server.url}/v1/audio/speech", content=json.dumps(body).encode(),
                              headers={"Content-Type": content_type}, timeout=60)

        ok = speech({"input": "Hello.", "voice": "default", "ref_audio": uri, "ref_text": text, "seed": 3})
        assert ok.status_code == 200 and validate_wav(ok.content).sample_rate == 44100
        tokens = {k: int(ok.headers[f"x-vllm-omni-{k}-tokens"]) for k in ("input", "output", "total", "input-text")}
        assert tokens["total"] == tokens["input"] + tokens["output"] and tokens["input-text"] == tokens["input"]
        raw_b64 = speech({"input": "Hi.", "ref_audio": base64.b64encode(audio).decode(), "ref_text": text})
        assert raw_b64.status_code == 400 and raw_b64.json()["error"]["param"] == "ref_audio"
        no_text = speech({"input": "Hi.", "ref_audio": uri})
        assert no_text.status_code == 400 and no_text.json()["error"]["type"] == "BadRequestError"
        assert speech({"input": ""}).json()["error"]["param"] == "input"
        assert speech({"input": "Hi.", "model": "nope"}).status_code == 404
        assert speech({"input": "Hi.", "max_new_tokens": 5000}).status_code == 400
        assert speech({"input": "Hi."}, content_type="text/plain").status_code == 400
        assert httpx.get(f"{server.url}/health").status_code == 200
        assert httpx.get(f"{server.url}/v1/models").json()["data"][0]["id"] == "fishaudio/s2-pro"


def test_openai_request_carries_a_data_uri_and_the_seed(tmp_path, dataset):
    with running_standin(protocol="openai", max_lifetime=300) as server:
        bodies = []
        original = server.record

        def keep(path, body, content_type):
            if path == "/v1/audio/speech":
                bodies.append(json.loads(body))
            return original(path, body, content_type)

        server.record = keep
        status, run_dir = generate_run(tmp_path, dataset, server.url, "adversary=openai_speech",
                                       "adversary.max_samples=2", "adversary.reference_check=false",
                                       path="/v1/audio/speech")
    assert status == RunStatus.GENERATED
    assert all(b["ref_audio"].startswith("data:audio/wav;base64,") and b["voice"] == "default" for b in bodies)
    assert [b["seed"] for b in bodies] == [s["seed"] for s in load_manifest(run_dir)["samples"]] == [42, 43]
