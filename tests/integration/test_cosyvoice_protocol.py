"""CosyVoice 2/3 (``POST /inference_zero_shot``) end to end on loopback against the stand-in's emulation: generate
with the (unseeded) reference gate, the recorded facts, an empty 200 and a cut stream as failed attempts, resume,
FastAPI's error shapes and readiness through ``/openapi.json``."""

from __future__ import annotations

import httpx
import pytest

from clonebench.core.errors import ReferenceIgnoredError, ServerNotReadyError
from clonebench.core.records import RunStatus
from clonebench.data.audio import validate_wav
from clonebench.standin import running_standin
from tests.conftest import generate_run, journal, load_manifest

PATH = "/inference_zero_shot"
COSY = "adversary=cosyvoice_http"
GATE_REQUESTS = 3  # the unseeded gate: reference A twice, reference B once


@pytest.fixture
def cosyvoice():
    with running_standin(protocol="cosyvoice", max_lifetime=600) as server:
        yield server


def sample_attempts(run_dir, index=0):
    sample_id = load_manifest(run_dir)["samples"][index]["sample_id"]
    return [e for e in journal(run_dir) if e["event"] == "attempt_end" and e["purpose"] == "sample"
            and e["sample_id"] == sample_id]


def test_generate_with_the_gate_records_an_unseeded_run(tmp_path, dataset, cosyvoice):
    status, run_dir = generate_run(tmp_path, dataset, cosyvoice.url, COSY, "adversary.max_samples=3", path=PATH)
    assert status == RunStatus.GENERATED
    manifest = load_manifest(run_dir)
    assert manifest["reference_check"]["status"] == "passed"
    assert manifest["reference_check"]["method"] == "voice distance (no seed)"
    assert manifest["seed_policy"] == "not_supported" and manifest["seeded"] is False
    assert manifest["seed_honoured"] is False
    assert manifest["reference_rule"]["max_s"] == 30.0
    for sample in manifest["samples"]:
        info = validate_wav((run_dir / sample["audio_path"]).read_bytes())
        assert info.sample_rate == 24000 and info.channels == 1 and info.duration_s > 0.3
    sent = [r for r in cosyvoice.received if r["path"] == PATH]
    assert len(sent) == GATE_REQUESTS + 3
    assert {r["content_type"].split(";")[0] for r in sent} == {"multipart/form-data"}


def test_an_empty_200_is_a_failed_sample_and_resume_regenerates_it(tmp_path, dataset, cosyvoice):
    cosyvoice.faults.add([{"kind": "empty"}])  # upstream issue #1805: 200 and no audio
    status, first = generate_run(tmp_path, dataset, cosyvoice.url, COSY, "adversary.max_samples=2",
                                 "adversary.reference_check=false", path=PATH, run_dir=tmp_path / "results" / "first")
    assert status == RunStatus.PARTIAL
    attempts = sample_attempts(first)
    assert [a["outcome"] for a in attempts] == ["permanent"] and attempts[0]["error_class"] == "InvalidAudio"
    assert "HTTP 200 but the body is empty: CosyVoice sent a 200 and no audio" in attempts[0]["error"]
    assert attempts[0]["status_code"] == 200 and attempts[0]["response_bytes"] == 0
    failed = load_manifest(first)["samples"][0]
    assert failed["status"] == "generation_failed" and not failed.get("audio_path")
    cosyvoice.received.clear()
    status, second = generate_run(tmp_path, dataset, cosyvoice.url, COSY, "adversary.max_samples=2",
                                  "adversary.reference_check=false", f"vc.resume_from={first}", path=PATH,
                                  run_dir=tmp_path / "results" / "second")
    assert status == RunStatus.GENERATED
    assert {e["sample_id"] for e in journal(second) if e["event"] == "attempt_start"} == {failed["sample_id"]}
    assert len([r for r in cosyvoice.received if r["path"] == PATH]) == 1
    assert load_manifest(second)["resumed_from"]["reused"] == 1


@pytest.mark.parametrize("measure", ["quality", "ttfb"])
def test_a_200_whose_stream_breaks_before_any_audio_is_one_failed_attempt(tmp_path, dataset, cosyvoice, measure):
    """What upstream's app sends when its model raises at once: 200, then the chunked stream breaks at 0 bytes.
    The model failed (the 200 comes before it runs): one failed attempt per pair, InvalidAudio, not resent."""
    cosyvoice.faults.add([{"kind": "model_error", "times": 5}])
    status, run_dir = generate_run(tmp_path, dataset, cosyvoice.url, COSY, "adversary.max_samples=5",
                                   "adversary.reference_check=false", f"adversary.measure={measure}", path=PATH)
    assert status == RunStatus.FAILED
    assert len([r for r in cosyvoice.received if r["path"] == PATH]) == 5  # 5 pairs, 5 requests
    for index in range(5):
        [attempt] = sample_attempts(run_dir, index)
        assert attempt["outcome"] == "permanent" and attempt["error_class"] == "InvalidAudio", attempt
        assert attempt["status_code"] == 200 and attempt["response_bytes"] == 0
        assert "HTTP 200 but the body broke before its first byte: CosyVoice sends its 200 before" in attempt["error"]


def test_a_cut_stream_is_retried_with_identical_bytes(tmp_path, dataset, cosyvoice):
    cosyvoice.faults.add([{"kind": "truncate"}])
    status, run_dir = generate_run(tmp_path, dataset, cosyvoice.url, COSY, "adversary.max_samples=1",
                                   "adversary.reference_check=false", path=PATH)
    assert status == RunStatus.GENERATED
    attempts = sample_attempts(run_dir)
    assert [a["outcome"] for a in attempts] == ["unknown_outcome", "ok"]
    assert "failed after starting the stream" in attempts[0]["error"]
    bodies = [r["sha256"] for r in cosyvoice.received if r["path"] == PATH]
    assert len(bodies) == 2 and len(set(bodies)) == 1


def test_the_gate_fails_on_a_server_that_ignores_its_reference(tmp_path, dataset, cosyvoice):
    cosyvoice.faults.set_sticky({"kind": "ignore_reference"})
    with pytest.raises(ReferenceIgnoredError):
        generate_run(tmp_path, dataset, cosyvoice.url, COSY, "adversary.max_samples=3", path=PATH)


def test_fastapi_errors_and_plain_500s(cosyvoice):
    url = cosyvoice.url + PATH
    missing = httpx.post(url, data={"tts_text": "Hi."})
    assert missing.status_code == 422
    assert [d["loc"] for d in missing.json()["detail"]] == [["body", "prompt_text"], ["body", "prompt_wav"]]
    assert httpx.get(url).status_code == 422  # the route answers GET too (a form it never gets)
    not_audio = httpx.post(url, data={"tts_text": "Hi.", "prompt_text": "Hello."},
                           files={"prompt_wav": ("p.wav", b"not audio", "audio/wav")})
    assert not_audio.status_code == 500 and not_audio.text == "Internal Server Error"
    assert httpx.post(cosyvoice.url + "/inference_sft").json() == {"detail": "Not Found"}


def test_a_plain_500_repeated_stops_early_with_the_reason(tmp_path, dataset, cosyvoice):
    cosyvoice.faults.add([{"kind": "status", "code": 500, "times": 3}])
    status, run_dir = generate_run(tmp_path, dataset, cosyvoice.url, COSY, "adversary.max_samples=1",
                                   "adversary.reference_check=false", path=PATH)
    assert status == RunStatus.FAILED  # its only sample failed
    attempts = sample_attempts(run_dir)
    assert [a["outcome"] for a in attempts] == ["transient", "permanent"]
    assert "an unhandled exception in the server (plain 500" in attempts[0]["error"]


def test_readiness_needs_the_route_in_the_servers_schema(tmp_path, dataset, cosyvoice):
    with pytest.raises(ServerNotReadyError, match=r"expected FastAPI's schema listing POST /tts"):
        generate_run(tmp_path, dataset, cosyvoice.url, COSY, "adversary.reference_check=false",
                     "adversary.ready_timeout=0", path="/tts")
