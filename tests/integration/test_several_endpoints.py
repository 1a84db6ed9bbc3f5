"""Several endpoints: least-outstanding dispatch, readiness per endpoint, an endpoint dying mid-run loses no sample."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter

import pytest

from clonebench.core.records import RunStatus
from clonebench.standin.process import start_process
from tests.conftest import generate_run, journal, load_manifest


@pytest.fixture
def servers(tmp_path):
    started = [start_process(tmp_path / f"s{i}.url", "--latency", "0.3", max_lifetime=300) for i in range(3)]
    yield started
    for process, _ in started:
        process.kill()
        process.wait(timeout=30)


def _overrides(urls):
    return [f"adversary.endpoint_urls=[{','.join(u + '/v1/tts' for u in urls)}]", "adversary.concurrency=3",
            "adversary.reference_check=false", "adversary.request_attempts=4"]


def test_requests_spread_over_endpoints(tmp_path, dataset, servers):
    urls = [url for _, url in servers]
    status, run_dir = generate_run(tmp_path, dataset, urls[0], *_overrides(urls))
    assert status == RunStatus.GENERATED
    used = Counter(e["endpoint"] for e in journal(run_dir) if e["event"] == "attempt_end")
    assert set(used) == {u + "/v1/tts" for u in urls} and min(used.values()) >= 2  # 8 samples over 3 endpoints
    assert load_manifest(run_dir)["endpoints"]["taken_out"] == {}


def test_an_endpoint_dying_mid_run_loses_no_sample(tmp_path, dataset, servers):
    urls = [url for _, url in servers]
    run_dir = tmp_path / "results" / "run"
    victim, victim_url = servers[1]

    def kill_after_two():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            path = run_dir / "sample_events.jsonl"
            lines = path.read_bytes().split(b"\n")[:-1] if path.exists() else []
            if sum(1 for x in lines if b'"status": "generated"' in x) >= 2:
                victim.send_signal(signal.SIGKILL)
                return
            time.sleep(0.01)

    killer = threading.Thread(target=kill_after_two)
    killer.start()
    status, run_dir = generate_run(tmp_path, dataset, urls[0], *_overrides(urls), "adversary.endpoint_eject_after=2",
                                   run_dir=run_dir)
    killer.join()
    assert status == RunStatus.GENERATED
    manifest = load_manifest(run_dir)
    assert manifest["counts"] == {"generated": 8} and len(list((run_dir / "generated_audio").rglob("*.wav"))) == 8
    events = journal(run_dir)
    assert any(e["event"] == "endpoint_ejected" and e["endpoint"] == victim_url + "/v1/tts" for e in events)
    after = [e for e in events if e["event"] == "attempt_end" and e["endpoint"] == victim_url + "/v1/tts"
             and e["outcome"] != "ok"]
    assert after, "the dead endpoint was never tried"
    assert victim_url + "/v1/tts" in manifest["endpoints"]["taken_out"]


def test_an_endpoint_that_is_not_ready_is_taken_out(tmp_path, dataset, servers):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    urls = [servers[0][1], dead]
    status, run_dir = generate_run(tmp_path, dataset, urls[0], *_overrides(urls), "adversary.max_samples=2")
    assert status == RunStatus.GENERATED
    manifest = load_manifest(run_dir)
    assert list(manifest["endpoints"]["taken_out"]) == [dead + "/v1/tts"]
    assert "not ready" in manifest["endpoints"]["taken_out"][dead + "/v1/tts"]
    assert {e["endpoint"] for e in journal(run_dir) if e["event"] == "attempt_end"} == {urls[0] + "/v1/tts"}
