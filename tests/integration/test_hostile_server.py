"""What a hostile server sends back cannot exhaust memory, outlast the deadline, crash the run, leak a
secret or rewrite the terminal: each answer of the hostile stand-in (``standin/hostile.py``) over real
loopback HTTP, against an in-process generate run."""

from __future__ import annotations

import json

import pytest

from clonebench.cli.main import main as cli_main
from clonebench.core.records import RunStatus
from clonebench.standin import running_standin
from tests.conftest import generate_run, journal, load_manifest

CAP = 4_000_000  # a small adversary.max_response_bytes keeps these tests quick; the hostile bodies are 2 GiB+
ONE = ["adversary.max_samples=2", "adversary.reference_check=false", f"adversary.max_response_bytes={CAP}"]


@pytest.fixture
def server():
    with running_standin(max_lifetime=300) as server:
        yield server


def sample_attempts(run_dir):
    return [e for e in journal(run_dir) if e["event"] == "attempt_end" and e["purpose"] == "sample"]


def first_attempts(run_dir):
    first = load_manifest(run_dir)["samples"][0]["sample_id"]
    return [a for a in sample_attempts(run_dir) if a["sample_id"] == first]


@pytest.mark.parametrize("fault", [
    {"kind": "oversized", "bytes": 2 << 30},                                  # declared in Content-Length
    {"kind": "endless"},                                                        # chunked, never ends
    {"kind": "compressed_bomb", "encoding": "gzip", "inflated": 2 << 30},
    {"kind": "compressed_bomb", "encoding": "deflate", "inflated": 2 << 30},
])
def test_a_body_over_the_cap_is_a_permanent_failure_read_no_further(tmp_path, dataset, server, fault):
    server.faults.add([fault])
    status, run_dir = generate_run(tmp_path, dataset, server.url, *ONE)
    attempts = first_attempts(run_dir)
    assert status == RunStatus.PARTIAL  # the second sample went through
    assert len(attempts) == 1 and attempts[0]["outcome"] == "permanent"
    assert attempts[0]["error_class"] == "ResponseTooLarge"
    assert "adversary.max_response_bytes" in attempts[0]["error"] and f"{CAP}" in attempts[0]["error"]
    held = attempts[0]["response_bytes"]  # body bytes received before the refusal
    assert held <= CAP + 65536  # never more than the cap (and one network read) was held
    assert held == 0 if "Content-Length" in attempts[0]["error"] else held > 0


def test_a_declared_oversized_body_is_refused_before_reading(tmp_path, dataset, server):
    server.faults.add([{"kind": "oversized", "bytes": 3 << 30}])
    status, run_dir = generate_run(tmp_path, dataset, server.url, *ONE)
    assert "Content-Length" in first_attempts(run_dir)[0]["error"]


def test_an_encoding_the_client_did_not_ask_for_is_refused(tmp_path, dataset, server):
    server.faults.add([{"kind": "bad_header", "variant": "encoding", "value": "br"}])
    status, run_dir = generate_run(tmp_path, dataset, server.url, *ONE)
    attempt = first_attempts(run_dir)[0]
    assert attempt["outcome"] == "permanent" and "Content-Encoding" in attempt["error"] and "br" in attempt["error"]


def test_the_client_asks_for_identity_encoding(tmp_path, dataset, server):
    server.faults.add([{"kind": "echo_headers", "code": 400}])
    status, run_dir = generate_run(tmp_path, dataset, server.url, *ONE)
    assert "'accept-encoding': 'identity'" in first_attempts(run_dir)[0]["error"].lower().replace('"', "'")


def test_timeout_bounds_the_whole_attempt_against_a_dripping_server(tmp_path, dataset, server, monkeypatch):
    from types import SimpleNamespace

    from clonebench.adversary import transport

    bounds = []  # the total bound each attempt runs under: what decides when it ends, read without a stopwatch
    real = transport.anyio.fail_after
    monkeypatch.setattr(transport, "anyio", SimpleNamespace(
        fail_after=lambda delay, *args, **kwargs: bounds.append(delay) or real(delay, *args, **kwargs)))
    server.faults.add([{"kind": "drip", "interval": 0.1}])  # every read is quick: only a total deadline stops it
    status, run_dir = generate_run(tmp_path, dataset, server.url, *ONE, "adversary.timeout=1.5",
                                   "adversary.request_attempts=1")
    attempt = first_attempts(run_dir)[0]
    assert status == RunStatus.PARTIAL
    assert attempt["outcome"] == "unknown_outcome" and attempt["error_class"] == "AttemptDeadline"
    assert "adversary.timeout=1.5" in attempt["error"]
    assert bounds and set(bounds) == {1.5 + transport.DEADLINE_GRACE_S}  # one total bound per attempt: the timeout
    # not cut before the deadline; the upper bound only guards against a hang (the drip would take ~10 000 s)
    assert 1.4 <= attempt["duration_s"] < 120


@pytest.mark.parametrize("value", ["soon", "Wed, 99 Foo 2024 25:61:00 GMT", "1e400", "nan", "-5", "3, 4", "", "\u00e9t\u00e9"])
def test_a_malformed_retry_after_falls_back_to_backoff(tmp_path, dataset, server, value, monkeypatch):
    from clonebench.adversary import transport

    waits = []  # the pause the retry policy chose before each retry, read without a stopwatch
    real = transport.RetryPolicy.wait

    def recording(policy):
        compute = real(policy)
        return lambda state: waits.append(compute(state)) or waits[-1]

    monkeypatch.setattr(transport.RetryPolicy, "wait", recording)
    server.faults.add([{"kind": "bad_header", "variant": "retry_after", "value": value}])
    status, run_dir = generate_run(tmp_path, dataset, server.url, *ONE, "adversary.retry_max_delay=0.3")
    attempts = first_attempts(run_dir)
    assert status == RunStatus.GENERATED
    assert [a["outcome"] for a in attempts] == ["transient", "ok"] and attempts[0]["error_class"] == "HTTP429"
    assert attempts[0].get("retry_after_s") is None or 0 <= attempts[0]["retry_after_s"] <= 0.3
    assert len(waits) == 1 and 0 <= waits[0] <= 0.3  # the backoff, within adversary.retry_max_delay
    assert attempts[1]["started_at"] >= attempts[0]["ended_at"]


@pytest.mark.parametrize("variant", ["content_length", "control_chars"])
def test_malformed_headers_are_recorded_failures_not_crashes(tmp_path, dataset, server, variant):
    server.faults.add([{"kind": "bad_header", "variant": variant}])
    status, run_dir = generate_run(tmp_path, dataset, server.url, *ONE, "adversary.request_attempts=1")
    attempt = first_attempts(run_dir)[0]
    assert status in (RunStatus.GENERATED, RunStatus.PARTIAL)  # the run ends normally either way
    if attempt["outcome"] != "ok":  # (h11 accepts an ESC in a header value it does not use)
        assert attempt["outcome"] in ("unknown_outcome", "permanent") and attempt["error_class"] and attempt["error"]
    assert variant != "content_length" or attempt["outcome"] != "ok"


def test_status_escapes_control_characters_from_a_server(tmp_path, dataset, server, capsys):
    server.faults.add([{"kind": "ansi", "code": 500, "times": 3}])
    status, run_dir = generate_run(tmp_path, dataset, server.url, *ONE, "adversary.request_attempts=3")
    assert status == RunStatus.PARTIAL
    capsys.readouterr()
    assert cli_main(["status", str(run_dir)]) == 0
    out = capsys.readouterr().out
    for raw in ("\x1b", "\r", "\x08", "\x07"):
        assert raw not in out
    assert "\\x1b[2J" in out and "\\r" in out
    # one line per failed sample: a newline in the body cannot fake a line of its own
    assert not any(line.startswith("ALL 16") for line in out.splitlines())


def test_a_key_echoed_back_by_the_server_is_redacted_everywhere(tmp_path, dataset, monkeypatch, capsys):
    secret = "sk-live-" + "c0ffee5ecret9dd1"
    monkeypatch.setenv("CLONEBENCH_TEST_KEY", secret)
    with running_standin(api_key=secret, max_lifetime=300) as server:
        server.faults.add([{"kind": "echo_headers", "code": 500, "times": 3}])
        status, run_dir = generate_run(tmp_path, dataset, server.url, *ONE, "adversary.api_key_env=CLONEBENCH_TEST_KEY")
        assert any(r["path"] == "/v1/tts" for r in server.received)
    assert status == RunStatus.PARTIAL
    errors = [a["error"] for a in first_attempts(run_dir)]
    assert errors and all("authorization" in e.lower() and "[redacted]" in e for e in errors)
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), f"API key leaked into {path}"
    capsys.readouterr()
    assert cli_main(["status", str(run_dir)]) == 0 and cli_main(["status", "--json", str(run_dir)]) == 0
    assert secret not in capsys.readouterr().out


def test_url_credentials_and_an_api_key_are_refused_together(tmp_path, dataset, monkeypatch):
    from clonebench.core.errors import ConfigError

    monkeypatch.setenv("CLONEBENCH_TEST_KEY", "sk-test-000011112222")
    with pytest.raises(ConfigError, match="api_key_env") as info:
        generate_run(tmp_path, dataset, "http://bob:pa55word-xyz@127.0.0.1:9", "adversary.api_key_env=CLONEBENCH_TEST_KEY")
    assert "pa55word-xyz" not in str(info.value)


def test_echo_body_is_json_of_request_headers(server):
    import httpx

    server.faults.add([{"kind": "echo_headers", "code": 500}])
    response = httpx.post(server.url + "/v1/tts", content=json.dumps({"text": "x", "references": []}),
                          headers={"Content-Type": "application/json", "X-Probe": "1"})
    assert response.status_code == 500 and response.json()["request_headers"]["X-Probe"] == "1"


class _HostileProbe:
    """A server whose every answer (readiness probes included) is one fixed hostile answer."""

    def __init__(self, answer):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                try:
                    answer(self)
                except OSError:
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _json_answer(body: bytes):
    def answer(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
    return answer


def _drip_answer(handler):
    import time

    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", "1000")
    handler.end_headers()
    for _ in range(1000):
        handler.wfile.write(b" ")
        handler.wfile.flush()
        time.sleep(0.1)


@pytest.mark.parametrize("answer, reason", [
    (_json_answer(b"[" * 200_000), "RecursionError"),                    # the JSON reader's own limit
    (_json_answer(b" " * (CAP + 10)), "ResponseTooLarge"),
    (_drip_answer, "no answer within adversary.timeout=1.5"),
])
def test_a_hostile_readiness_answer_is_a_clear_not_ready(tmp_path, dataset, answer, reason):
    from clonebench.core.errors import ServerNotReadyError

    probe = _HostileProbe(answer)
    try:
        with pytest.raises(ServerNotReadyError, match=reason):
            generate_run(tmp_path, dataset, probe.url, *ONE, "adversary.timeout=1.5")
    finally:
        probe.close()
    assert load_manifest(tmp_path / "results" / "run")["status"] == "failed"
