#!/usr/bin/env python
"""Generate-phase overheads, measured in one run and printed as ratios.

1. Client overhead: a generate run of the eSpeak demo pairs against the stand-in with a fixed
   per-request latency. overhead = (client wall time of the generation loop - sum of the server's
   own handling time per request) / that sum. It covers encoding, HTTP, WAV validation, the atomic
   write and the fsync'd journal. Goal <= 2 %.
2. Re-hash of an unchanged checkpoint: sha256 of a 1 GB file, first with an empty hash cache, then
   again from a new cache handle (as a later run would). Goal: second <= 1 % of the first.

    python bench/generate_overhead.py [--pairs-per-speaker 8] [--latency 0.5] [--checkpoint-gb 1]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))


def client_overhead(work: Path, pairs_per_speaker: int, latency: float) -> dict:
    """The stand-in runs in its own process, as a real server would, so that it does not share our GIL."""
    import httpx

    from clonebench.demo.dataset import build_demo_dataset
    from clonebench.runs.pipeline import run
    from tests.conftest import compose

    manifest = build_demo_dataset(work / "data", pairs_per_speaker=pairs_per_speaker)
    from clonebench.standin.process import start_process

    server, url = start_process(work / "url", "--latency", str(latency))
    try:
        cfg = compose("demo", [f"paths.results_dir={work / 'results'}", f"dataset.manifest_filename={manifest}",
                               f"dataset.root_path={manifest.parent}", f"adversary.endpoint_url={url}/v1/tts",
                               "+vc.generate_only=true", "adversary.reference_check=false"])
        run(cfg, work / "results" / "run", "bench")
        handled = [r["handled_s"] for r in httpx.get(f"{url}/_standin/received").json() if r["path"] == "/v1/tts"]
    finally:
        server.terminate()
        server.wait(timeout=30)
    events = [json.loads(x) for x in (work / "results" / "run" / "sample_events.jsonl").read_text().splitlines()]
    first = min(e["ts"] for e in events if e["event"] == "sample" and e["status"] == "generating")
    last = max(e["ts"] for e in events if e["event"] == "sample" and e["status"] == "generated")
    wall = last - first
    server_time = sum(handled)
    return {"requests": len(handled), "latency_s": latency, "client_wall_s": round(wall, 3),
            "server_handling_s": round(server_time, 3), "overhead_ratio": round((wall - server_time) / server_time, 4)}


def rehash(work: Path, gigabytes: float) -> dict:
    from clonebench.core.hashing import HashCache

    path = work / "checkpoint.bin"
    block = os.urandom(1 << 20)
    with open(path, "wb") as handle:
        for _ in range(int(gigabytes * 1024)):
            handle.write(block)
    db = work / "cache.sqlite"
    cache = HashCache(db)
    started = time.perf_counter()
    first_digest = cache.sha256(path)
    first = time.perf_counter() - started
    cache.close()
    again = HashCache(db)
    started = time.perf_counter()
    second_digest = again.sha256(path)
    second = time.perf_counter() - started
    again.close()
    assert first_digest == second_digest
    return {"bytes": path.stat().st_size, "first_s": round(first, 4), "rehash_s": round(second, 6),
            "rehash_ratio": round(second / first, 6)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs-per-speaker", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--checkpoint-gb", type=float, default=1.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        overhead = client_overhead(Path(tmp), args.pairs_per_speaker, args.latency)
        hashing = rehash(Path(tmp), args.checkpoint_gb)
    print(json.dumps({"client_overhead": overhead, "checkpoint_rehash": hashing}, indent=2))
    print(f"client overhead vs stand-in with {args.latency}s latency: {overhead['overhead_ratio']:.2%} (goal <= 2%)")
    print(f"re-hash of unchanged {hashing['bytes'] / 2**30:.1f} GiB checkpoint vs first hash: "
          f"{hashing['rehash_ratio']:.4%} (goal <= 1%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
