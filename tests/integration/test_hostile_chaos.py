"""The hostile chaos test: whole ``run_vc.py`` runs (own process, as a user runs them) against the hostile
stand-in (own process) and against a server that is down, with secrets in play. Asserts: each hostile answer
ends as a clear recorded failure, the runner's memory stays far below the hostile bodies, nothing is written
outside the run directory (and the shared cache), and no secret reaches a file, stdout, stderr or the
``status`` output."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from clonebench.standin.process import start_process
from tests.conftest import REPO, journal, load_manifest

KEY = "sk-chaos-" + "5a1t3d9e0f7b2c48"
PASSWORD = "Hunter2-" + "pw9x4q"
CAP = 8_000_000
# one hostile answer per sample (request_attempts=1, concurrency=1): (fault, outcome, error_class)
HOSTILE = [
    ({"kind": "oversized", "bytes": 2 << 30}, "permanent", "ResponseTooLarge"),
    ({"kind": "endless"}, "permanent", "ResponseTooLarge"),
    ({"kind": "compressed_bomb", "encoding": "gzip", "inflated": 2 << 30}, "permanent", "ResponseTooLarge"),
    ({"kind": "drip", "interval": 0.2}, "unknown_outcome", "AttemptDeadline"),
    ({"kind": "bad_header", "variant": "retry_after", "value": "soon"}, "transient", "HTTP429"),
    ({"kind": "ansi", "code": 500}, "transient", "HTTP500"),
    ({"kind": "echo_headers", "code": 500}, "transient", "HTTP500"),
    ({"kind": "bad_header", "variant": "content_length"}, "unknown_outcome", "RemoteProtocolError"),
]
RUNNER = """
import runpy, sys
sys.argv = sys.argv[1:]
import clonebench.runs.pipeline, clonebench.generate.phase, clonebench.config.settings, clonebench.adversary.fish_s2_http  # noqa
import hydra, httpx, numpy, soundfile, tenacity, tqdm  # noqa: loaded before the baseline
base = int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS:")).split()[1])  # resident now, kB
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
    code = 0
except SystemExit as exc:
    code = exc.code
# VmHWM, not ru_maxrss: ru_maxrss keeps the parent's size from before exec (a pytest process with models loaded)
peak = int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1])
print(f"RSS_KB {base} {peak}", flush=True)
sys.exit(code)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]), "CB_CHAOS_KEY": KEY}


def _run_vc(tmp_path: Path, data: Path, *overrides: str, measure: bool = False):
    script = tmp_path / "runner.py"
    if measure:
        script.write_text(RUNNER)
    head = [sys.executable, str(script), str(REPO / "run_vc.py")] if measure else [sys.executable, str(REPO / "run_vc.py")]
    command = [*head, "--config-name", "demo", f"paths.results_dir={tmp_path / 'results'}",
               f"dataset.manifest_filename={data / 'metadata.json'}", f"dataset.root_path={data}",
               "+vc.generate_only=true", "adversary.retry_initial_delay=0.01", "adversary.retry_max_delay=0.2",
               "adversary.ready_timeout=2", *overrides]
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=_env(), timeout=300)


def _files(root: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def _status(run_dir: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clonebench.cli.main", "status", *flags, str(run_dir)],
                          capture_output=True, text=True, env=_env(), timeout=120)


def _assert_no_secret(secret: str, root: Path, *outputs: str) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), f"secret leaked into {path}"
    for text in outputs:
        assert secret not in text


def test_a_generate_run_against_every_hostile_answer(tmp_path, dataset, monkeypatch):
    monkeypatch.setenv("CB_CHAOS_KEY", KEY)  # the stand-in requires the key, and echoes it back
    faults = json.dumps([fault for fault, _, _ in HOSTILE])
    server, url = start_process(tmp_path / "port", "--api-key-env", "CB_CHAOS_KEY", "--faults", faults,
                                max_lifetime=240)
    before = _files(tmp_path)
    try:
        result = _run_vc(tmp_path, dataset, f"adversary.endpoint_url={url}/v1/tts", "adversary.api_key_env=CB_CHAOS_KEY",
                         "adversary.reference_check=false", "adversary.request_attempts=1", "adversary.timeout=2",
                         f"adversary.max_response_bytes={CAP}", measure=True)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert result.returncode == 1, result.stderr[-3000:]  # a failed run, reported, not a crash
    assert "Traceback" not in result.stderr
    run_dir = next((tmp_path / "results" / "demo").glob("*-*"))
    # every hostile answer is one recorded failure of the sample it was sent for, classified
    starts = [e["sample_id"] for e in journal(run_dir) if e["event"] == "attempt_start" and e["purpose"] == "sample"]
    ends = {e["sample_id"]: e for e in journal(run_dir) if e["event"] == "attempt_end" and e["purpose"] == "sample"}
    assert len(starts) == len(HOSTILE)
    for sample_id, (fault, outcome, error_class) in zip(starts, HOSTILE):
        attempt = ends[sample_id]
        assert (attempt["outcome"], attempt["error_class"]) == (outcome, error_class), fault
        if error_class == "AttemptDeadline":  # the configured total deadline (adversary.timeout=2) ended it: not
            # cut before it, and the upper bound only guards against a hang (the drip would take hours)
            assert "adversary.timeout=2 s" in attempt["error"] and 2.0 <= attempt["duration_s"] < 120
        if error_class == "ResponseTooLarge":
            assert attempt["response_bytes"] <= CAP + 65536
        print(f"{fault['kind']:<16} {attempt['outcome']:<16} {attempt['error_class']:<20} "
              f"{attempt['duration_s']:.2f} s, {attempt.get('response_bytes')} body bytes read")
    manifest = load_manifest(run_dir)
    assert manifest["status"] == "failed" and len(manifest["sample_errors"]) == len(HOSTILE)
    # memory: the peak over the resident size before the run, far below the 2 GiB bodies (the cap is 8 MB)
    base_kb, peak_kb = map(int, result.stdout.split("RSS_KB")[1].split())
    assert (peak_kb - base_kb) * 1024 < 200_000_000, (base_kb, peak_kb)
    print(f"runner peak RSS growth {(peak_kb - base_kb) / 1024:.1f} MiB against 2 GiB hostile bodies")
    # nothing written outside the run directory and the shared cache
    after = _files(tmp_path)
    changed = {p for p, t in after.items() if before.get(p) != t} - {tmp_path / "runner.py"}
    outside = [p for p in changed if run_dir not in p.parents and (tmp_path / "results" / ".cache") not in p.parents]
    assert not outside, outside
    # no secret anywhere; the terminal output is escaped
    text, as_json = _status(run_dir), _status(run_dir, "--json")
    assert text.returncode == 0 and as_json.returncode == 0
    _assert_no_secret(KEY, tmp_path, result.stdout, result.stderr, text.stdout, as_json.stdout)
    assert "[redacted]" in json.dumps(manifest["sample_errors"])
    for out in (text.stdout, result.stdout, result.stderr, (run_dir / "run_vc.log").read_text()):
        assert "\x1b[2J" not in out and "\x1b]0;" not in out


def test_url_credentials_reach_no_file_and_no_output(tmp_path, dataset):
    down = f"http://alice:{PASSWORD}@127.0.0.1:{_free_port()}/v1/tts"
    result = _run_vc(tmp_path, dataset, f"adversary.endpoint_url={down}")
    assert result.returncode == 2 and "not ready" in result.stderr and "127.0.0.1" in result.stderr
    _assert_no_secret(PASSWORD, tmp_path, result.stdout, result.stderr)
    assert list((tmp_path / "results" / "demo").glob("*-*/run_vc.log"))
    # one endpoint of two down: it is taken out with a logged warning, the run goes on with the other
    server, url = start_process(tmp_path / "port", max_lifetime=240)
    try:
        up = url.replace("http://", f"http://alice:{PASSWORD}@") + "/v1/tts"
        result = _run_vc(tmp_path, dataset, f"adversary.endpoint_url={up}", f"adversary.endpoint_urls=['{down}','{up}']",
                         "adversary.max_samples=2", "adversary.concurrency=2", "adversary.reference_check=false")
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert result.returncode == 0, result.stderr[-3000:]
    logs = "".join(p.read_text() for p in (tmp_path / "results" / "demo").glob("*-*/run_vc.log"))
    assert "taken out" in logs
    run_dir = sorted((tmp_path / "results" / "demo").glob("*-*"))[-1]
    _assert_no_secret(PASSWORD, tmp_path, result.stdout, result.stderr, _status(run_dir).stdout)


def test_url_credentials_with_an_api_key_are_refused_without_showing_them(tmp_path, dataset):
    url = f"http://alice:{PASSWORD}@127.0.0.1:{_free_port()}/v1/tts"
    result = _run_vc(tmp_path, dataset, f"adversary.endpoint_url={url}", "adversary.api_key_env=CB_CHAOS_KEY")
    assert result.returncode == 2 and "adversary.api_key_env=CB_CHAOS_KEY" in result.stderr
    _assert_no_secret(PASSWORD, tmp_path, result.stdout, result.stderr)
