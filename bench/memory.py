#!/usr/bin/env python
"""Peak resident memory of a generate run for 200 vs 2,000 pairs, printed as a ratio (goal <= 1.2x).

The pairs reuse the eSpeak demo files (rows differ in ids and seeds); the stand-in answers cheap tones
(``--tone``) and serves requests in parallel so that the benchmark measures the harness, not the server.

    python bench/memory.py [--small 200] [--large 2000] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _standins import REPO, requests_received, run_vc, start_standin  # noqa: E402

sys.path.insert(0, str(REPO / "src"))


def main() -> int:
    from clonebench.demo.dataset import build_demo_dataset, scale_manifest

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=200)
    parser.add_argument("--large", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        base = build_demo_dataset(work / "data")
        server, url = start_standin(work, "s", "--tone", "--parallel")
        try:
            results = {}
            for pairs in (args.small, args.large):
                results[pairs] = run_vc(work, scale_manifest(base, pairs), f"adversary.endpoint_url={url}/v1/tts",
                                        f"adversary.concurrency={args.concurrency}", "adversary.reference_check=false")
            sent = requests_received(url)
        finally:
            server.kill()
    ratio = results[args.large]["max_rss_kib"] / results[args.small]["max_rss_kib"]
    print(json.dumps({str(k): {"peak_rss_mib": round(v["max_rss_kib"] / 1024, 1), "wall_s": v["wall_s"]}
                      for k, v in results.items()} | {"requests": sent}, indent=2))
    print(f"peak RSS {args.large} vs {args.small} pairs: {ratio:.3f}x (goal <= 1.2x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
