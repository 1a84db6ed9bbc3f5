"""Every fault class over real loopback HTTP against the stand-in, for every adversary protocol:
classification, number of attempts, byte-identical resent bodies, unknown outcomes, run status."""

from __future__ import annotations

import pytest

from clonebench.core.errors import ReferenceIgnoredError, ServerNotReadyError
from clonebench.core.records import RunStatus
from clonebench.standin import running_standin
from tests.conftest import generate_run, journal, load_manifest

PROTOCOLS = {  # adversary -> stand-in protocol, route, overrides, requests its reference check sends first
    "fish_s2_http": ("fish", "/v1/tts", ["adversary.reference_check=false"], 0),
    "s2cpp_http": ("s2cpp", "/generate", ["adversary=s2cpp_http"], 3),  # the gate is mandatory, and unseeded
    "openai_speech": ("openai", "/v1/audio/speech", ["adversary=openai_speech", "adversary.reference_check=false"], 0),
}


class Target:
    def __init__(self, name, server):
        self.name, self.server = name, server
        self.protocol, self.path, self.overrides, self.gate = PROTOCOLS[name]

    def faults(self, *faults):
        self.server.faults.add(([{"kind": "none", "times": self.gate}] if self.gate else []) + list(faults))

    def run(self, tmp_path, dataset, *extra, **kw):
        return generate_run(tmp_path, dataset, self.server.url, "adversary.max_samples=3", *self.overrides, *extra,
                            path=self.path, **kw)


@pytest.fixture(params=sorted(PROTOCOLS))
def target(request):
    with running_standin(protocol=PROTOCOLS[request.param][0], max_lifetime=600) as server:
        yield Target(request.param, server)


def first_sample_attempts(run_dir):
    first = load_manifest(run_dir)["samples"][0]["sample_id"]
    return [e for e in journal(run_dir) if e["event"] == "attempt_end" and e["purpose"] == "sample"
            and e["sample_id"] == first]


def bodies_of(server, attempts):
    """Bodies the server received for these attempts (matched by the journaled request sha256)."""
    wanted = {a["request_sha256"] for a in attempts}
    return [r["sha256"] for r in server.received if r["sha256"] in wanted]


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
def test_retryable_faults_are_retried_with_identical_bytes(tmp_path, dataset, target, fault, outcome, error_class):
    if fault.get("code") == 500:  # two different 500 bodies (identical ones stop early: see test_real_server_behaviour)
        target.faults({**fault, "message": "first failure"}, {**fault, "message": "second failure"})
    else:
        target.faults({**fault, "times": 2})
    status, run_dir = target.run(tmp_path, dataset)
    assert status == RunStatus.GENERATED
    attempts = first_sample_attempts(run_dir)
    if target.name == "s2cpp_http" and fault.get("code") == 503:  # s2.cpp's busy: resent within one attempt
        busy = [e for e in journal(run_dir) if e["event"] == "server_busy"]
        assert [a["outcome"] for a in attempts] == ["ok"] and len(busy) == 2
        assert len(set(bodies_of(target.server, attempts))) == 1
        return
    assert [a["outcome"] for a in attempts] == [outcome, outcome, "ok"]
    if error_class:
        assert attempts[0]["error_class"] == error_class
    bodies = bodies_of(target.server, attempts)
    assert len(bodies) == 3 and len(set(bodies)) == 1  # the server saw the same bytes three times
    sample = load_manifest(run_dir)["samples"][0]
    assert sample["status"] == "generated" and sample["attempts"] == 3
    assert (run_dir / sample["audio_path"]).is_file()


def test_read_timeout_is_unknown_outcome(tmp_path, dataset, target):
    target.faults({"kind": "delay", "seconds": 2.0})
    status, run_dir = target.run(tmp_path, dataset, "adversary.timeout=0.9")
    attempts = first_sample_attempts(run_dir)
    assert status == RunStatus.GENERATED and [a["outcome"] for a in attempts] == ["unknown_outcome", "ok"]
    assert attempts[0]["error_class"] == "ReadTimeout"


def test_retry_after_is_honoured(tmp_path, dataset, target):
    target.faults({"kind": "status", "code": 429, "retry_after": 1})
    status, run_dir = target.run(tmp_path, dataset, "adversary.retry_max_delay=5")
    attempts = first_sample_attempts(run_dir)
    assert status == RunStatus.GENERATED and attempts[0]["retry_after_s"] == 1.0
    assert attempts[1]["started_at"] - attempts[0]["ended_at"] >= 0.95


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
def test_permanent_faults_are_not_retried(tmp_path, dataset, target, fault, error_class):
    target.faults(fault)
    status, run_dir = target.run(tmp_path, dataset)
    assert status == RunStatus.PARTIAL
    attempts = first_sample_attempts(run_dir)
    assert len(attempts) == 1 and attempts[0]["outcome"] == "permanent" and attempts[0]["error_class"] == error_class
    assert len(bodies_of(target.server, attempts)) == 1
    manifest = load_manifest(run_dir)
    assert [s["status"] for s in manifest["samples"]] == ["generation_failed", "generated", "generated"]
    assert manifest["counts"] == {"generated": 2, "generation_failed": 1}


def test_attempts_run_out(tmp_path, dataset, target):
    code = 502 if target.name == "s2cpp_http" else 503  # s2.cpp's 503 is "busy": waited for within an attempt
    target.faults({"kind": "status", "code": code, "times": 3})
    status, run_dir = target.run(tmp_path, dataset, "adversary.request_attempts=3")
    attempts = first_sample_attempts(run_dir)
    assert status == RunStatus.PARTIAL and [a["outcome"] for a in attempts] == ["transient"] * 3
    assert len(set(bodies_of(target.server, attempts))) == 1
    assert load_manifest(run_dir)["sample_errors"][0]["error_class"] == f"HTTP{code}"


def test_server_down_fails_fast_naming_the_url(tmp_path, dataset, target):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ServerNotReadyError, match=rf"http://127.0.0.1:{port}/"):
        generate_run(tmp_path, dataset, f"http://127.0.0.1:{port}", *target.overrides, path=target.path)
    assert load_manifest(tmp_path / "results" / "run")["status"] == "failed"


def test_a_server_that_ignores_the_reference_is_refused(tmp_path, dataset, target):
    target.server.faults.set_sticky({"kind": "ignore_reference"})
    overrides = [o for o in target.overrides if o != "adversary.reference_check=false"]
    with pytest.raises(ReferenceIgnoredError, match="ignores the reference"):
        generate_run(tmp_path, dataset, target.server.url, "adversary.max_samples=3", *overrides, path=target.path)
    manifest = load_manifest(tmp_path / "results" / "run")
    assert manifest["status"] == "failed" and manifest["reference_check"]["status"] == "failed"
    assert not any(e["purpose"] == "sample" for e in journal(tmp_path / "results" / "run") if e["event"] == "attempt_end")


def test_the_reference_check_passes_on_a_conditioned_server(tmp_path, dataset, target):
    overrides = [o for o in target.overrides if o != "adversary.reference_check=false"]
    status, run_dir = generate_run(tmp_path, dataset, target.server.url, "adversary.max_samples=3", *overrides,
                                   path=target.path)
    check = load_manifest(run_dir)["reference_check"]
    assert status == RunStatus.GENERATED and check["status"] == "passed"
    expected = "voice distance (no seed)" if target.name == "s2cpp_http" else "byte comparison (seeded)"
    assert check["method"] == expected


def test_the_unseeded_check_needs_two_speakers(tmp_path, dataset):
    with running_standin(protocol="s2cpp", max_lifetime=300) as server:
        with pytest.raises(ReferenceIgnoredError, match="select pairs of at least two speakers"):
            generate_run(tmp_path, dataset, server.url, "adversary=s2cpp_http", "dataset.speaker_id=1001",
                         path="/generate")


def test_s2cpp_refuses_to_skip_the_reference_check(tmp_path, dataset):
    from clonebench.core.errors import ConfigError

    with pytest.raises(ConfigError, match="reference_check=false is refused for s2cpp_http"):
        generate_run(tmp_path, dataset, "http://127.0.0.1:9", "adversary=s2cpp_http",
                     "adversary.reference_check=false", path="/generate")


def test_json_bodies_and_concurrency_keep_manifest_order(tmp_path, dataset):
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
    secret = "sk-test-" + "7f3a9c1e5b2d4068"
    monkeypatch.setenv("CLONEBENCH_TEST_KEY", secret)
    with running_standin(api_key=secret, max_lifetime=300) as server:
        with pytest.raises(ServerNotReadyError, match="401"):
            generate_run(tmp_path / "nokey", dataset, server.url, "adversary.max_samples=1")
        status, run_dir = generate_run(tmp_path, dataset, server.url, "adversary.api_key_env=CLONEBENCH_TEST_KEY",
                                       "adversary.max_samples=2")
    assert status == RunStatus.GENERATED
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), f"API key leaked into {path}"
    assert load_manifest(run_dir)["config"]["adversary"]["api_key_env"] == "CLONEBENCH_TEST_KEY"


def test_credentials_in_an_endpoint_url_never_reach_an_artifact(tmp_path, dataset, standin):
    url = standin.url.replace("http://", "http://alice:hunter2secret@")
    status, run_dir = generate_run(tmp_path, dataset, url, "adversary.max_samples=2", "adversary.reference_check=false")
    assert status == RunStatus.GENERATED
    for path in run_dir.rglob("*"):
        if path.is_file() and path.parent.name != ".hydra":  # Hydra's own record of the command line
            assert b"hunter2secret" not in path.read_bytes(), f"credentials leaked into {path}"
