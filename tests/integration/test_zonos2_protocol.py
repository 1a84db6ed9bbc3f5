"""Zonos 2 (``POST /tts/generate``) end to end on loopback against the stand-in's emulation: generate with the
seeded reference gate, float32 PCM normalised to WAV, an empty 200 and NaN samples as failed attempts, a cut
stream retried, resume, FastAPI's error shapes and readiness through ``/tts/capabilities``."""

from __future__ import annotations

import httpx
import pytest

from clonebench.core.errors import ReferenceIgnoredError, ServerNotReadyError
from clonebench.core.records import RunStatus
from clonebench.data.audio import validate_wav
from clonebench.standin import running_standin
from tests.conftest import generate_run, journal, load_manifest

PATH = "/tts/generate"
ZONOS = "adversary=zonos2_http"


@pytest.fixture
def zonos():
    with running_standin(protocol="zonos2", max_lifetime=600) as server:
        yield server


def sample_attempts(run_dir, index=0):
    sample_id = load_manifest(run_dir)["samples"][index]["sample_id"]
    return [e for e in journal(run_dir) if e["event"] == "attempt_end" and e["purpose"] == "sample"
            and e["sample_id"] == sample_id]


def test_generate_with_the_gate_records_a_seeded_run(tmp_path, dataset, zonos):
    status, run_dir = generate_run(tmp_path, dataset, zonos.url, ZONOS, "adversary.max_samples=3", path=PATH)
    assert status == RunStatus.GENERATED
    manifest = load_manifest(run_dir)
    check = manifest["reference_check"]
    assert check["status"] == "passed" and check["method"] == "byte comparison (seeded)"
    assert manifest["seeded"] is True and manifest["seed_honoured"] is True
    for sample in manifest["samples"]:
        info = validate_wav((run_dir / sample["audio_path"]).read_bytes())
        assert info.sample_rate == 44100 and info.channels == 1 and info.duration_s > 0.3


def test_empty_200_and_nan_samples_fail_and_resume_regenerates_them(tmp_path, dataset, zonos):
    zonos.faults.add([{"kind": "empty"}, {"kind": "nan"}])
    status, first = generate_run(tmp_path, dataset, zonos.url, ZONOS, "adversary.max_samples=3",
                                 "adversary.reference_check=false", path=PATH, run_dir=tmp_path / "results" / "first")
    assert status == RunStatus.PARTIAL
    empty, nan = sample_attempts(first, 0), sample_attempts(first, 1)
    assert [a["outcome"] for a in empty] == ["permanent"] and empty[0]["error_class"] == "InvalidAudio"
    assert "the body is empty: Zonos 2 sent a 200 and no audio" in empty[0]["error"]
    assert "NaN or infinite" in nan[0]["error"]
    zonos.received.clear()
    status, second = generate_run(tmp_path, dataset, zonos.url, ZONOS, "adversary.max_samples=3",
                                  "adversary.reference_check=false", f"vc.resume_from={first}", path=PATH,
                                  run_dir=tmp_path / "results" / "second")
    assert status == RunStatus.GENERATED
    samples = load_manifest(first)["samples"]
    assert {e["sample_id"] for e in journal(second) if e["event"] == "attempt_start"} == \
        {samples[0]["sample_id"], samples[1]["sample_id"]}
    assert load_manifest(second)["resumed_from"]["reused"] == 1


def test_a_cut_stream_is_retried_with_identical_bytes(tmp_path, dataset, zonos):
    zonos.faults.add([{"kind": "truncate"}])
    status, run_dir = generate_run(tmp_path, dataset, zonos.url, ZONOS, "adversary.max_samples=1",
                                   "adversary.reference_check=false", path=PATH)
    assert status == RunStatus.GENERATED
    assert [a["outcome"] for a in sample_attempts(run_dir)] == ["unknown_outcome", "ok"]
    bodies = [r["sha256"] for r in zonos.received if r["path"] == PATH]
    assert len(bodies) == 2 and len(set(bodies)) == 1


def test_streamed_or_not_is_the_same_generation(tmp_path, dataset, zonos):
    runs = []
    for stream in ("true", "false"):
        status, run_dir = generate_run(tmp_path, dataset, zonos.url, ZONOS, "adversary.max_samples=1",
                                       "adversary.reference_check=false", f"adversary.stream={stream}", path=PATH,
                                       run_dir=tmp_path / "results" / stream)
        assert status == RunStatus.GENERATED
        manifest = load_manifest(run_dir)
        runs.append((manifest["fingerprints"]["generation"], manifest["samples"][0]["duration_s"]))
    assert runs[0] == runs[1]  # the stream flag is left out of the fingerprint: a resume may change it
    chunked = [r for r in zonos.received if r["path"] == PATH]
    assert len(chunked) == 2 and chunked[0]["sha256"] != chunked[1]["sha256"]


def test_the_gate_fails_on_a_server_that_ignores_its_reference(tmp_path, dataset, zonos):
    zonos.faults.set_sticky({"kind": "ignore_reference"})
    with pytest.raises(ReferenceIgnoredError):
        generate_run(tmp_path, dataset, zonos.url, ZONOS, "adversary.max_samples=3", path=PATH)


def test_error_shapes(tmp_path, dataset, zonos):
    url = zonos.url + PATH
    assert httpx.post(url, json={"language": "en_us"}).json()["detail"][0]["loc"] == ["body", "text"]
    assert httpx.post(url, json={"text": "Hi.", "language": "nl"}).json()["detail"].startswith(
        "Unsupported language code: 'nl'")
    assert httpx.post(url, json={"text": "Hi.", "speaker_audio_base64": "@@"}).status_code == 400
    zonos.faults.add([{"kind": "status", "code": 400, "message": "Current model does not support speaker embeddings."}])
    status, run_dir = generate_run(tmp_path, dataset, zonos.url, ZONOS, "adversary.max_samples=1",
                                   "adversary.reference_check=false", path=PATH)
    attempt = sample_attempts(run_dir)[0]
    assert status == RunStatus.FAILED and attempt["outcome"] == "permanent"
    assert "the server refused the request: Current model does not support speaker embeddings." in attempt["error"]


def test_readiness_reads_the_capabilities(tmp_path, dataset, zonos):
    assert httpx.get(zonos.url + "/tts/capabilities").json()["speaker_enabled"] is True
    with pytest.raises(ServerNotReadyError, match="expected its capabilities JSON"):
        generate_run(tmp_path, dataset, zonos.url, ZONOS, "adversary.reference_check=false",
                     "adversary.ready_timeout=0", path="/v1/generate")
