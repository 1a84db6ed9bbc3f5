"""Every fault class over real loopback HTTP against the stand-in: classification, attempts, identical bytes."""

from __future__ import annotations

import pytest

from clonebench.errors import ReferenceIgnoredError, ServerNotReadyError
from clonebench.records import RunStatus

from tests.conftest import generate_run, journal, load_manifest

ONE = ["adversary.max_samples=1", "adversary.reference_check=false"]


def tts_bodies(server):
    return [r["sha256"] for r in server.received if r["path"] == "/v1/tts"]


def attempts_of(run_dir):
    return [e for e in journal(run_dir) if e["event"] == "attempt_end" and e["purpose"] == "sample"]


@pytest.mark.parametrize("fault, outcome, error_class", [
    ({"kind": "status", "code": 503}, "transient", "HTTP503"),
    ({"kind": "status", "code": 500}, "transient", "HTTP500"),
    ({"kind": "status", "code": 502}, "transient", "HTTP502"),
    ({"kind": "status", "code": 504}, "transient", "HTTP504"),
    ({"kind": "status", "code": 408}, "transient", "HTTP408"),
    ({"kind": "status", "code": 425}, "transient", "HTTP425"),
    ({"kind": "status", "code": 429}, "transient", "HTTP429"),
    ({"kind": "reset"}, "unknown_outcome", None),
    ({"kind": "truncate"}, "unknown_outcome", "RemoteProtocolError"),
])
def test_retryable_faults_are_retried_with_identical_bytes(tmp_path, dataset, standin, fault, outcome, error_class):
    standin.faults.add([{**fault, "times": 2}])
    status, run_dir = generate_run(tmp_path, dataset, standin.url, *ONE)
    assert status == RunStatus.GENERATED
    attempts = attempts_of(run_dir)
    assert [a["outcome"] for a in attempts] == [outcome, outcome, "ok"]
    if error_class:
        assert attempts[0]["error_class"] == error_class
    bodies = tts_bodies(standin)
    assert len(bodies) == 3 and len(set(bodies)) == 1  # the server saw the same bytes three times
    assert {a["request_sha256"] for a in attempts} == {bodies[0]}
    sample = load_manifest(run_dir)["samples"][0]
    assert sample["status"] == "generated" and sample["attempts"] == 3
    assert (run_dir / sample["audio_path"]).is_file()


def test_read_timeout_is_unknown_outcome(tmp_path, dataset, standin):
    standin.faults.add([{"kind": "delay", "seconds": 2.0}])
    status, run_dir = generate_run(tmp_path, dataset, standin.url, *ONE, "adversary.timeout=0.7")
    assert status == RunStatus.GENERATED
    attempts = attempts_of(run_dir)
    assert [a["outcome"] for a in attempts] == ["unknown_outcome", "ok"]
    assert attempts[0]["error_class"] == "ReadTimeout"


def test_retry_after_is_honoured(tmp_path, dataset, standin):
    standin.faults.add([{"kind": "status", "code": 429, "retry_after": 1}])
    status, run_dir = generate_run(tmp_path, dataset, standin.url, *ONE, "adversary.retry_max_delay=5")
    attempts = attempts_of(run_dir)
    assert status == RunStatus.GENERATED and attempts[0]["retry_after_s"] == 1.0
    starts = [e["ts"] for e in journal(run_dir) if e["event"] == "attempt_start"]
    assert starts[1] - attempts[0]["ended_at"] >= 0.95


@pytest.mark.parametrize("fault, error_class", [
    ({"kind": "status", "code": 400}, "HTTP400"),
    ({"kind": "status", "code": 404}, "HTTP404"),
    ({"kind": "status", "code": 409}, "HTTP409"),
    ({"kind": "status", "code": 301}, "HTTP301"),
    ({"kind": "status", "code": 501}, "HTTP501"),
    ({"kind": "not_wav"}, "InvalidAudio"),
    ({"kind": "nan"}, "InvalidAudio"),
    ({"kind": "wav_truncated_header"}, "InvalidAudio"),
])
def test_permanent_faults_are_not_retried(tmp_path, dataset, standin, fault, error_class):
    standin.faults.add([fault])
    status, run_dir = generate_run(tmp_path, dataset, standin.url, *ONE)
    assert status == RunStatus.FAILED
    attempts = attempts_of(run_dir)
    assert len(attempts) == 1 and attempts[0]["outcome"] == "permanent"
    assert attempts[0]["error_class"] == error_class
    assert len(tts_bodies(standin)) == 1
    manifest = load_manifest(run_dir)
    assert manifest["samples"][0]["status"] == "generation_failed"
    assert not (run_dir / "generated_audio").exists()


def test_attempts_run_out(tmp_path, dataset, standin):
    standin.faults.add([{"kind": "status", "code": 503, "times": 5}])
    status, run_dir = generate_run(tmp_path, dataset, standin.url, *ONE, "adversary.request_attempts=3")
    assert status == RunStatus.FAILED
    assert [a["outcome"] for a in attempts_of(run_dir)] == ["transient"] * 3
    assert len(set(tts_bodies(standin))) == 1 and len(tts_bodies(standin)) == 3
    sample = load_manifest(run_dir)["sample_errors"][0]
    assert sample["error_class"] == "HTTP503"


def test_partial_run(tmp_path, dataset, standin):
    standin.faults.add([{"kind": "status", "code": 400}])
    status, run_dir = generate_run(tmp_path, dataset, standin.url, "adversary.max_samples=3",
                                   "adversary.reference_check=false")
    assert status == RunStatus.PARTIAL
    assert load_manifest(run_dir)["counts"] == {"generated": 2, "generation_failed": 1}


def test_server_down_fails_fast_naming_the_url(tmp_path, dataset):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ServerNotReadyError, match=rf"http://127.0.0.1:{port}/v1/health"):
        generate_run(tmp_path, dataset, f"http://127.0.0.1:{port}", *ONE)
    assert load_manifest(tmp_path / "results" / "run")["status"] == "failed"


def test_server_that_ignores_the_reference_is_refused(tmp_path, dataset, standin):
    standin.faults.set_sticky({"kind": "ignore_reference"})
    with pytest.raises(ReferenceIgnoredError, match="ignores the reference"):
        generate_run(tmp_path, dataset, standin.url)
    assert len(tts_bodies(standin)) == 2  # the two gate requests, no sample request
    manifest = load_manifest(tmp_path / "results" / "run")
    assert manifest["status"] == "failed" and manifest["reference_check"]["status"] == "failed"


def test_reference_gate_passes_on_a_conditioned_server(tmp_path, dataset, standin):
    status, run_dir = generate_run(tmp_path, dataset, standin.url, "adversary.max_samples=2")
    manifest = load_manifest(run_dir)
    assert status == RunStatus.GENERATED and manifest["reference_check"]["status"] == "passed"
    assert len(set(manifest["reference_check"]["output_sha256"])) == 2


def test_json_bodies_and_concurrency_keep_manifest_order(tmp_path, dataset):
    from clonebench.standin import running_standin

    with running_standin(latency=0.2, serial=False, max_lifetime=300) as server:
        status, run_dir = generate_run(tmp_path, dataset, server.url, "adversary.body_format=json",
                                       "adversary.concurrency=4", "adversary.reference_check=false")
        assert {r["content_type"] for r in server.received if r["path"] == "/v1/tts"} == {"application/json"}
    manifest = load_manifest(run_dir)
    assert status == RunStatus.GENERATED
    assert [s["row_number"] for s in manifest["samples"]] == list(range(8))
    starts = [e["ts"] for e in journal(run_dir) if e["event"] == "attempt_start"]
    ends = [e["ts"] for e in journal(run_dir) if e["event"] == "attempt_end"]
    assert sum(1 for s in starts if s < min(ends)) >= 2  # several requests were in flight at once


def test_api_key_is_sent_but_never_written(tmp_path, dataset, monkeypatch):
    from clonebench.standin import running_standin

    secret = "sk-test-" + "7f3a9c1e5b2d4068"
    monkeypatch.setenv("CLONEBENCH_TEST_KEY", secret)
    with running_standin(api_key=secret, max_lifetime=300) as server:
        with pytest.raises(ServerNotReadyError, match="401"):
            generate_run(tmp_path / "nokey", dataset, server.url, *ONE)
        status, run_dir = generate_run(tmp_path, dataset, server.url, "adversary.api_key_env=CLONEBENCH_TEST_KEY",
                                       "adversary.max_samples=2")
    assert status == RunStatus.GENERATED
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), f"API key leaked into {path}"
    assert load_manifest(run_dir)["config"]["adversary"]["api_key_env"] == "CLONEBENCH_TEST_KEY"
