"""Triton KServe v2 (the TTS recipes): the adversary against the stand-in's emulation over real loopback HTTP."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import soundfile as sf

from clonebench.core.errors import ServerNotReadyError
from clonebench.core.records import RunStatus
from clonebench.standin import running_standin
from tests.conftest import generate_run, journal, load_manifest

INFER = "/v2/models/cosyvoice2/infer"
NO_GATE = "adversary.reference_check=false"


def run(tmp_path, dataset, server, *extra, **kw):
    return generate_run(tmp_path, dataset, server.url, "adversary=triton_kserve", "adversary.max_samples=3", *extra,
                        path=INFER, **kw)


def infer_bodies(server):
    return [r for r in server.received if r["path"] == INFER]


def sample_attempts(run_dir, index=0):
    sample_id = load_manifest(run_dir)["samples"][index]["sample_id"]
    return [e for e in journal(run_dir) if e["event"] == "attempt_end" and e["purpose"] == "sample"
            and e["sample_id"] == sample_id]


def test_generate_records_an_unseeded_run_and_resumes(tmp_path, dataset):
    with running_standin(protocol="triton", max_lifetime=600) as server:
        bodies = []
        original = server.record

        def keep(path, body, content_type):
            if path == INFER:
                bodies.append(json.loads(body))
            return original(path, body, content_type)

        server.record = keep
        status, run_dir = run(tmp_path, dataset, server)  # with the reference gate (voice distance: no seed)
        assert status == RunStatus.GENERATED
        manifest = load_manifest(run_dir)
        assert manifest["seeded"] is False and manifest["seed_policy"] == "not_supported"
        assert manifest["seed_honoured"] is False
        assert manifest["generation_provenance"]["seeded"] is False
        assert manifest["generation_provenance"]["protocol"] == "triton_kserve"
        assert manifest["reference_check"]["status"] == "passed"
        assert manifest["reference_check"]["method"] == "voice distance (no seed)"
        assert "cosyvoice2" in json.dumps(manifest["readiness"])
        for body in bodies:
            inputs = {i["name"]: i for i in body["inputs"]}
            assert sorted(inputs) == ["reference_text", "reference_wav", "reference_wav_len", "target_text"]
            assert inputs["reference_wav_len"]["data"] == [[inputs["reference_wav"]["shape"][1]]]
            assert "seed" not in json.dumps(body)
        for sample in manifest["samples"]:
            assert sample["status"] == "generated" and sample["seed"] is None
            info = sf.info(io.BytesIO((run_dir / sample["audio_path"]).read_bytes()))
            assert info.samplerate == 24000 and info.subtype == "FLOAT"

        sent = len(infer_bodies(server))
        status, resumed = run(tmp_path, dataset, server, NO_GATE, f"vc.resume_from={run_dir}",
                              run_dir=tmp_path / "results" / "resumed")
        assert status == RunStatus.GENERATED
        assert load_manifest(resumed)["resumed_from"]["reused"] == 3
        assert len(infer_bodies(server)) == sent  # nothing re-sent


def test_a_500_error_json_is_retried_with_identical_bytes_and_nan_is_refused(tmp_path, dataset):
    with running_standin(protocol="triton", max_lifetime=600) as server:
        server.faults.add([{"kind": "status", "code": 500, "message": "Failed to process the request(s) A"},
                           {"kind": "status", "code": 500, "message": "Failed to process the request(s) B"},
                           {"kind": "none"}, {"kind": "nan"}])
        status, run_dir = run(tmp_path, dataset, server, NO_GATE)
        assert status == RunStatus.PARTIAL
        first = sample_attempts(run_dir, 0)
        assert [a["outcome"] for a in first] == ["transient", "transient", "ok"]
        assert first[0]["error_class"] == "HTTP500" and "Triton: the model failed" in first[0]["error"]
        assert len({a["request_sha256"] for a in first}) == 1
        wanted = first[0]["request_sha256"]
        assert len([r for r in infer_bodies(server) if r["sha256"] == wanted]) == 3
        second = sample_attempts(run_dir, 1)
        assert [a["outcome"] for a in second] == ["permanent"] and second[0]["error_class"] == "InvalidAudio"
        assert "NaN" in second[0]["error"]
        manifest = load_manifest(run_dir)
        assert [s["status"] for s in manifest["samples"]] == ["generated", "generation_failed", "generated"]


def test_a_model_error_from_several_instances_stops_early_by_its_meaning(tmp_path, dataset):
    """The recipes run several instances of a model, and each 500 names the instance that served it: one
    deterministic model error reads differently on every attempt, yet means the same, so the second stops."""
    message = "Failed to process the request(s) for model instance '{instance}', message: RuntimeError: shape '[1, -1]'"
    with running_standin(protocol="triton", max_lifetime=600) as server:
        server.triton_instances = 3
        server.faults.add([{"kind": "status", "code": 500, "message": message, "times": 3},
                           {"kind": "status", "code": 500, "message": message.replace("shape", "CUDA"), "times": 1}])
        status, run_dir = run(tmp_path, dataset, server, NO_GATE, "adversary.request_attempts=3",
                              "adversary.max_samples=2")
        bodies = infer_bodies(server)
    assert status == RunStatus.PARTIAL
    first = sample_attempts(run_dir, 0)
    assert "cosyvoice2_0_0" in first[0]["error"] and "cosyvoice2_0_1" in first[1]["error"]
    assert [a["outcome"] for a in first] == ["transient", "permanent"]
    assert "stopped early: the same HTTP 500 error as the previous attempt" in first[1]["error"]
    second = sample_attempts(run_dir, 1)  # another error, then another again: two meanings, not stopped early
    assert [a["outcome"] for a in second] == ["transient", "transient", "ok"], second
    assert len(bodies) == 2 + 3


def test_a_model_not_ready_or_decoupled_is_refused_before_any_request(tmp_path, dataset):
    with running_standin(protocol="triton", max_lifetime=600) as server:
        server.triton_unready = {"cosyvoice2"}
        with pytest.raises(ServerNotReadyError, match=r"model 'cosyvoice2' not ready.*/v2/models/cosyvoice2/ready"):
            run(tmp_path, dataset, server, NO_GATE, "adversary.ready_timeout=1")
        server.triton_unready = set()
        server.triton_decoupled = {"cosyvoice2"}
        with pytest.raises(ServerNotReadyError, match="decoupled"):
            run(tmp_path, dataset, server, NO_GATE, run_dir=tmp_path / "results" / "decoupled")
        assert infer_bodies(server) == []


def test_another_model_not_ready_does_not_hold_the_run(tmp_path, dataset):
    """tritonserver's strict readiness: /v2/health/ready is 400 while any model of the repository is not ready;
    the run's own model being ready is what counts."""
    with running_standin(protocol="triton", max_lifetime=300) as server:
        server.triton_unready = {"spark_tts"}
        status, _run_dir = run(tmp_path, dataset, server, NO_GATE, "adversary.ready_timeout=1")
        assert status == RunStatus.GENERATED  # the strict server-wide 400 did not make it wait out ready_timeout


def test_an_unknown_model_is_refused_naming_it(tmp_path, dataset):
    with running_standin(protocol="triton", max_lifetime=300) as server, \
            pytest.raises(ServerNotReadyError, match="no model 'nope'"):
        generate_run(tmp_path, dataset, server.url, "adversary=triton_kserve", "adversary.model=nope", NO_GATE,
                     path="/v2/models/nope/infer")


def test_spark_answers_at_16k(tmp_path, dataset):
    with running_standin(protocol="triton", max_lifetime=300) as server:
        status, run_dir = generate_run(tmp_path, dataset, server.url, "adversary=triton_kserve",
                                       "adversary.model=spark_tts", "adversary.output_sample_rate=16000",
                                       "adversary.max_samples=1", NO_GATE, path="/v2/models/spark_tts/infer")
        assert status == RunStatus.GENERATED
        sample = load_manifest(run_dir)["samples"][0]
        audio, rate = sf.read(io.BytesIO((run_dir / sample["audio_path"]).read_bytes()))
        assert rate == 16000 and np.isfinite(audio).all()
