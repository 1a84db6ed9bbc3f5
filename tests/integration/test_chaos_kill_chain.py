"""Chaos: a chain of runs killed with SIGKILL at random (seeded) moments, each resumed from the newest run as
the README advises (or from the run a refused resume names), then run to the end. Asserted from the stand-in's own request log: no pair is sent again
once its WAV was written in any run of the chain; nothing outside the run directories is written or linked.
Bounded: 40 pairs, 8 kills, a few tens of seconds. The figures are printed (``-s``) for the report."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from clonebench.data.audio import validate_wav
from clonebench.standin import running_standin
from tests.conftest import REPO

SEED = 20261130
KILLS = 8
COPIES = 5  # the demo's 8 pairs x 5 = 40 pairs


def _dataset(source: Path, target: Path) -> Path:
    """The demo pairs, repeated under new pair ids and source indices (so each has its own id and seed)."""
    import shutil

    shutil.copytree(source, target)
    payload = json.loads((target / "metadata.json").read_text())
    pairs = []
    for copy in range(COPIES):
        for row in payload["pairs"]:
            pairs.append({**row, "pair_id": f"{row['pair_id']}-c{copy}",
                          "source_index": row["source_index"] + 1000 * copy})
    payload["pairs"] = pairs
    (target / "metadata.json").write_text(json.dumps(payload))
    return target


def _command(data: Path, results: Path, url: str, run_dir: Path, origin: Path | None) -> list[str]:
    return [sys.executable, str(REPO / "run_vc.py"), "--config-name", "demo", f"paths.results_dir={results}",
            f"dataset.manifest_filename={data / 'metadata.json'}", f"dataset.root_path={data}",
            f"adversary.endpoint_url={url}/v1/tts", "+vc.generate_only=true", "adversary.reference_check=false",
            "adversary.concurrency=2", f"hydra.run.dir={run_dir}",
            *([f"vc.resume_from={origin}"] if origin is not None else [])]


def _written(run_dirs: list[Path]) -> set[str]:
    """Sample ids with a complete WAV (not a temporary file) in any run of the chain."""
    found = set()
    for run_dir in run_dirs:
        for wav in (run_dir / "generated_audio").rglob("*.wav") if (run_dir / "generated_audio").is_dir() else []:
            if not wav.name.startswith("."):
                found.add(wav.stem)
    return found


def _tree(root: Path) -> dict[str, tuple]:
    return {str(p): (p.stat().st_ino, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in root.rglob("*") if p.is_file() and not p.is_symlink()}


@pytest.mark.slow
def test_kill_and_resume_chain_never_resends_a_written_pair(tmp_path, demo_dataset):
    rng = random.Random(SEED)
    data = _dataset(demo_dataset, tmp_path / "data")
    data_before = _tree(data)
    results = tmp_path / "results"
    chain_root = results / "chain"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    runs: list[Path] = []
    written_before_run: list[set[str]] = []
    windows: list[tuple[float, float]] = []
    kills = refusals = 0
    last_error = ""
    logs = tmp_path / "logs"
    logs.mkdir()
    with running_standin(latency=0.12, max_lifetime=600) as server:
        for k in range(KILLS + 1):
            run_dir = chain_root / f"{k:02d}"
            written_before_run.append(_written(runs))
            # the README: resume the newest run; when a resume is refused, resume from the run its message names
            existing = [r for r in runs if r.is_dir()]
            origin = existing[-1] if existing else None
            named = re.search(r"resume from the newest run that has a run_manifest\.json \(probably (\S+),", last_error)
            if named:
                origin = Path(named.group(1))
            elif "none before it has one: start a new run without vc.resume_from" in last_error:
                origin = None
            started = time.time()
            log = logs / f"{k:02d}.stderr"
            with open(log, "wb") as stderr:
                process = subprocess.Popen(_command(data, results, server.url, run_dir, origin), cwd=tmp_path,
                                           env=env, stdout=subprocess.DEVNULL, stderr=stderr)
            runs.append(run_dir)
            if k < KILLS:
                try:
                    process.wait(timeout=rng.uniform(0.3, 3.5))  # sometimes before the journal exists
                except subprocess.TimeoutExpired:
                    process.send_signal(signal.SIGKILL)
                    kills += 1
                process.wait(timeout=30)
            else:
                process.wait(timeout=120)
            last_error = log.read_text(errors="replace")
            refusals += "clonebench: error: vc.resume_from" in last_error
            windows.append((started, time.time()))
        assert process.returncode == 0, last_error[-3000:]
        received = [r for r in server.received if r["path"] == "/v1/tts"]

    # which sample each request was for: the journals' request hashes (requests are serialised once per sample)
    by_hash: dict[str, str] = {}
    for run_dir in runs:
        journal = run_dir / "sample_events.jsonl"
        if journal.is_file():
            for line in journal.read_bytes().split(b"\n")[:-1]:
                event = json.loads(line)
                if event["event"] == "attempt_start" and event.get("request_sha256"):
                    by_hash[event["request_sha256"]] = event["sample_id"]
    resent_after_written = []
    per_sample: Counter = Counter()
    for request in received:
        sample_id = by_hash.get(request["sha256"])
        assert sample_id is not None, "a request the journals do not know"
        per_sample[sample_id] += 1
        k = next(i for i, (start, end) in enumerate(windows) if start - 0.01 <= request["ts"] <= end + 0.01)
        if sample_id in written_before_run[k]:
            resent_after_written.append((k, sample_id))

    final = json.loads((runs[-1] / "run_manifest.json").read_text())
    pairs = len(final["samples"])
    figures = {"seed": SEED, "pairs": pairs, "kills": kills, "runs": len(runs), "refused_resumes": refusals, "requests": len(received),
               "max_requests_per_pair": max(per_sample.values()), "pairs_sent_twice": sum(v > 1 for v in per_sample.values()),
               "requests_for_written_pairs": len(resent_after_written),
               "reused_by_final_run": final["resumed_from"]["reused"]}
    print("chaos figures:", json.dumps(figures))
    assert resent_after_written == []
    assert final["status"] == "generated" and pairs == 8 * COPIES
    for row in final["samples"]:
        path = runs[-1] / row["audio_path"]
        assert not path.is_symlink() and hashlib.sha256(path.read_bytes()).hexdigest() == row["audio_sha256"]
        validate_wav(path.read_bytes())
    # nothing outside the run directories written or linked: the dataset is unchanged, the results folder holds
    # only the chain's runs and the shared hash cache, and no run file shares an inode with anything outside them
    assert _tree(data) == data_before
    assert {p.name for p in results.iterdir()} <= {"chain", ".cache"}
    assert {p.name for p in chain_root.iterdir()} <= {r.name for r in runs}  # (a kill can precede the folder)
    outside_inodes = {v[0] for v in data_before.values()}
    for run_dir in runs:
        for path in run_dir.rglob("*"):
            assert not path.is_symlink(), path
            if path.is_file():
                assert path.stat().st_ino not in outside_inodes, path
