#!/usr/bin/env python
"""Throughput over several endpoints, printed as ratios measured in one run.

4 stand-in Fish servers (each one request at a time, fixed latency) are generated against (a) through one
endpoint, (b) through all four (least-outstanding dispatch, concurrency 4), and (c) by an upstream-style
serial client: one request at a time, a fixed 10 s sleep before each retry, to the same stand-ins.
Goals: (b) >= 0.9 * 4 x (a); (b) >= 3.6 x (c).

    python bench/endpoints.py [--pairs 24] [--latency 0.5]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _standins import REPO, run_vc, start_standin  # noqa: E402

sys.path.insert(0, str(REPO / "src"))


def serial_client(manifest: Path, urls: list[str], attempts: int = 3, retry_sleep: float = 10.0) -> float:
    """The upstream shape: one request at a time to one server, fixed sleep between attempts."""
    import httpx
    import ormsgpack

    pairs = json.loads(manifest.read_text())["pairs"]
    started = time.perf_counter()
    with httpx.Client(timeout=600) as http:
        for index, pair in enumerate(pairs):
            body = ormsgpack.packb({"text": pair["target_text"], "references": [
                {"audio": (manifest.parent / pair["prompt_file_name"]).read_bytes(), "text": pair["prompt_text"]}],
                "reference_id": None, "format": "wav", "streaming": False, "seed": 42 + pair["source_index"]})
            for _ in range(attempts):
                response = http.post(f"{urls[0]}/v1/tts", content=body, headers={"Content-Type": "application/msgpack"})
                if response.status_code == 200:
                    break
                time.sleep(retry_sleep)
    return time.perf_counter() - started


def main() -> int:
    from clonebench.demo.dataset import build_demo_dataset, scale_manifest

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=24)
    parser.add_argument("--latency", type=float, default=0.5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        manifest = scale_manifest(build_demo_dataset(work / "data"), args.pairs)
        servers = [start_standin(work, f"s{i}", "--latency", str(args.latency)) for i in range(4)]
        urls = [url for _, url in servers]
        try:
            common = ["adversary.reference_check=false", "evaluation.metrics=[sim]"]
            one = run_vc(work, manifest, f"adversary.endpoint_url={urls[0]}/v1/tts", "adversary.concurrency=1", *common)
            four = run_vc(work, manifest, f"adversary.endpoint_urls=[{','.join(u + '/v1/tts' for u in urls)}]",
                          "adversary.concurrency=4", *common)
            serial = serial_client(manifest, urls)
            one_s, four_s = generation_seconds(one["run_dir"]), generation_seconds(four["run_dir"])
        finally:
            for process, _ in servers:
                process.kill()
    print(json.dumps({"pairs": args.pairs, "latency_s": args.latency, "one_endpoint_generation_s": one_s,
                      "four_endpoints_generation_s": four_s, "serial_client_s": round(serial, 3),
                      "process_wall_s": {"one": one["wall_s"], "four": four["wall_s"]}}, indent=2))
    print(f"4 endpoints vs 1: {one_s / four_s:.2f}x (goal >= {0.9 * 4:.1f}x)")
    print(f"4 endpoints vs upstream-style serial client: {serial / four_s:.2f}x (goal >= 3.6x)")
    return 0


def generation_seconds(run_dir: str) -> float:
    """From the first request's start to the last saved WAV (the generation loop; process start-up excluded,
    as the serial client's timing excludes its own)."""
    events = [json.loads(x) for x in (Path(run_dir) / "sample_events.jsonl").read_text().splitlines()]
    first = min(e["ts"] for e in events if e["event"] == "attempt_start")
    last = max(e["ts"] for e in events if e["event"] == "sample" and e["status"] == "generated")
    return round(last - first, 3)


if __name__ == "__main__":
    raise SystemExit(main())
