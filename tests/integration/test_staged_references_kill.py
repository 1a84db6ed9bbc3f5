"""References staged on the server's disk survive no kill (issue #42 item 7): GPT-SoVITS and SGLang-Omni take the
reference as a path in a shared folder. A run killed with a real SIGKILL mid-run has staged files there; each was
recorded in its journal before its request, and the resume of the chain removes them with its own at its end:
the share then holds what it held before the chain began (a file that was there before stays)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clonebench.core.records import RunStatus
from clonebench.standin import gpt_sovits_api, running_standin
from tests.conftest import REPO, generate_run, load_manifest

NO_GATE = "adversary.reference_check=false"
# protocol -> (stand-in emulation, route, extra overrides); the eSpeak demo references are under GPT-SoVITS's 3 s
PROTOCOLS = {"sglang_omni_speech": ("sglang_omni", "/v1/audio/speech", ()),
             "gpt_sovits_http": ("gpt_sovits", "/tts", ("adversary.reference_duration_check=false",))}


def events(run_dir: Path) -> list[dict]:
    path = run_dir / "sample_events.jsonl"
    return [json.loads(x) for x in path.read_bytes().split(b"\n")[:-1]] if path.exists() else []


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_a_sigkilled_run_leaves_the_share_as_it_found_it_once_its_resume_ends(protocol, tmp_path, dataset,
                                                                             monkeypatch):
    emulation, route, extra = PROTOCOLS[protocol]
    monkeypatch.setattr(gpt_sovits_api, "REF_MIN_S", 2.0)
    share = tmp_path / "share"
    share.mkdir()
    (share / "theirs.wav").write_bytes(b"not ours")  # what the share held before: it stays
    before = {p.name: p.read_bytes() for p in share.iterdir()}
    overrides = [f"adversary={protocol}", f"adversary.reference_share.local_dir={share}", NO_GATE, *extra]
    results = tmp_path / "results"
    with running_standin(protocol=emulation, references_dir=share, latency=0.3, max_lifetime=300) as server:
        process = subprocess.Popen(
            [sys.executable, str(REPO / "run_vc.py"), "--config-name", "demo", f"paths.results_dir={results}",
             f"dataset.manifest_filename={dataset / 'metadata.json'}", f"dataset.root_path={dataset}",
             f"adversary.endpoint_url={server.url}{route}", "+vc.generate_only=true", *overrides],
            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline, killed = time.monotonic() + 90, None
        while time.monotonic() < deadline and killed is None:
            assert process.poll() is None, "the run finished before the kill point"
            runs = sorted((results / "demo").glob("*-*")) if (results / "demo").exists() else []
            started = [e for e in events(runs[-1]) if e["event"] == "attempt_start"] if runs else []
            if len(set(p.name for p in share.iterdir()) - set(before)) >= 2 and len(started) >= 3:
                killed = runs[-1]
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        assert killed is not None, "kill point never reached"
        left = {p.name for p in share.iterdir()} - set(before)
        recorded = {e["name"] for e in events(killed) if e["event"] == "reference_staged"}
        assert len(left) >= 2 and {n for n in left if not n.startswith(".")} <= recorded  # recorded, then written
        status, resumed = generate_run(tmp_path, dataset, server.url, *overrides, f"vc.resume_from={killed}",
                                       run_dir=results / "resumed", path=route)
    assert status == RunStatus.GENERATED
    assert {p.name: p.read_bytes() for p in share.iterdir()} == before  # as the chain found it
    record = load_manifest(resumed)["reference_share"]
    assert record["adopted"] >= 1 and record["removed"] == len(record["staged"])
