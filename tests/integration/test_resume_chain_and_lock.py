"""Resume chains and run locks: the newest run of a chain reaches back to every finished sample, and a run
that is being written (or resumed from) cannot be resumed by a second process."""

from __future__ import annotations

import signal

import pytest
from omegaconf import OmegaConf

from clonebench.core.errors import ClonebenchError
from clonebench.core.records import RunStatus
from clonebench.standin import running_standin
from tests.conftest import compose, generate_run, journal, load_manifest
from tests.integration.test_resume_and_kill import NO_GATE, _events, _generated, _start, _wait_for


def _tts(server) -> int:
    return len([r for r in server.received if r["path"] == "/v1/tts"])


def test_locked_run_is_refused_and_the_failed_resume_leads_back(tmp_path, dataset):
    with running_standin(latency=0.3, max_lifetime=300) as server:
        process, run_root = _start(tmp_path, dataset, server.url)
        writing = _wait_for(process, run_root, lambda ev: _generated(ev) >= 2)
        # its runner holds the lock: a resume now would send the pairs it is still sending
        with pytest.raises(ClonebenchError, match="in use by another clonebench process"):
            generate_run(tmp_path, dataset, server.url, NO_GATE, f"vc.resume_from={writing}",
                         run_dir=tmp_path / "results" / "refused")
        refused = tmp_path / "results" / "refused"
        assert not [e for e in journal(refused) if e["event"] == "attempt_start"]
        assert load_manifest(refused)["status"] == "failed"
        # and a second runner of the same directory is refused before it writes anything
        with pytest.raises(ClonebenchError, match="locked by another clonebench process"):
            generate_run(tmp_path, dataset, server.url, NO_GATE, run_dir=writing)
        process.send_signal(signal.SIGKILL)  # the kernel drops the lock with the process
        process.wait(timeout=30)
        done = {e["sample_id"] for e in _events(writing) if e["event"] == "sample" and e["status"] == "generated"}
        before = _tts(server)
        # the README's advice: resume the newest run, here the failed resume, which records where it came from
        status, resumed = generate_run(tmp_path, dataset, server.url, NO_GATE, f"vc.resume_from={refused}",
                                       run_dir=tmp_path / "results" / "resumed")
        sent = _tts(server) - before
    assert status == RunStatus.GENERATED
    manifest = load_manifest(resumed)
    assert manifest["resumed_from"]["reused"] >= len(done) and sent == 8 - manifest["resumed_from"]["reused"]
    assert not {e["sample_id"] for e in journal(resumed) if e["event"] == "attempt_start"} & done
    assert {r["reused_from"] for r in manifest["samples"] if r.get("reused_from")} == {str(writing)}


def test_a_run_killed_before_its_journal_existed_leads_back_to_its_origin(tmp_path, dataset, standin):
    status, first = generate_run(tmp_path, dataset, standin.url, NO_GATE, "adversary.max_samples=8",
                                 run_dir=tmp_path / "results" / "first")
    assert status == RunStatus.GENERATED
    # a resume of `first` killed before it wrote a journal or manifest: only Hydra's record of its config
    killed = tmp_path / "results" / "killed"
    cfg = compose("demo", [f"dataset.manifest_filename={dataset / 'metadata.json'}", f"vc.resume_from={first}"])
    (killed / ".hydra").mkdir(parents=True)
    OmegaConf.save(cfg, killed / ".hydra" / "config.yaml")
    standin.received.clear()
    try:  # (a build that refuses this directory leaves a failed run: its newest run is then that one)
        status, newest = generate_run(tmp_path, dataset, standin.url, NO_GATE, "adversary.max_samples=8",
                                      f"vc.resume_from={killed}", run_dir=tmp_path / "results" / "second")
    except ClonebenchError:
        newest = tmp_path / "results" / "second"
        status, newest = generate_run(tmp_path, dataset, standin.url, NO_GATE, "adversary.max_samples=8",
                                      f"vc.resume_from={newest}", run_dir=tmp_path / "results" / "third")
    assert status == RunStatus.GENERATED
    assert _tts(standin) == 0 and load_manifest(newest)["resumed_from"]["reused"] == 8
