#!/usr/bin/env python
"""Resuming a finished 2,000-pair run: no request may be sent, and it should take <= 5 s (wall time of the
whole ``run_vc.py`` process, start-up and input checks included).

The first (timed separately) run generates every pair against a stand-in answering cheap tones; the
resume run re-checks every input (unchanged files are known from the hash cache), re-hashes every saved
WAV of the first run, links them into its own run directory and journals them.

    python bench/resume.py [--pairs 2000]
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
    parser.add_argument("--pairs", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        manifest = scale_manifest(build_demo_dataset(work / "data"), args.pairs)
        server, url = start_standin(work, "s", "--tone", "--parallel")
        try:
            common = [f"adversary.endpoint_url={url}/v1/tts", "adversary.concurrency=8", "adversary.reference_check=false"]
            first = run_vc(work, manifest, *common)
            before = requests_received(url)
            resumed = run_vc(work, manifest, *common, f"vc.resume_from={first['run_dir']}")
            sent = requests_received(url) - before
            reused = json.loads((Path(resumed["run_dir"]) / "run_manifest.json").read_text())["resumed_from"]["reused"]
        finally:
            server.kill()
    print(json.dumps({"pairs": args.pairs, "first_run_s": first["wall_s"], "resume_s": resumed["wall_s"],
                      "requests_sent_on_resume": sent, "reused": reused}, indent=2))
    print(f"resume of a finished {args.pairs}-pair run: {sent} requests, {resumed['wall_s']:.2f} s "
          f"(goal: 0 requests, <= 5 s; ratio to the goal {resumed['wall_s'] / 5.0:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
