#!/usr/bin/env python
"""Where one evaluate run's wall time goes: each model's own forward calls vs everything else.

Runs one scoring process (``--who phase``: ``run_vc.py +vc.evaluate_only=true``; ``api``: ``clonebench.metrics
.Evaluator.score_many``; ``peer``: rvcbench 2.2.1's ``metrics.Evaluator``) on the real-speech pairs of
bench/_speech_pairs.py with the probes of bench/_probe.py, and prints per label (ECAPA forward and its Fbank, WORLD
+ mel-cepstrum and DTW for MCD, torch_stoi, Whisper encode / decode, DNSMOS sessions; audio decoding and
resampling; scorer loads) the seconds, calls and the forward cost per clip, then the overhead: the part of the wall
(launch to exit) during which no model forward ran on any thread (start-up, imports, decoding, resampling,
hashing, I/O, waits), and the peak RSS of each phase (start-up, each scorer group, exit).

    python bench/profile_evaluate.py [--who phase|api|peer] [--pairs 12] [--design distinct|shared] [--wer]
                                     [--metrics sim,sva,mcd,stoi] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _speech_pairs import build_pairs, peer_assets, write_manifest  # noqa: E402
from evaluate_vs_peer import run_worker  # noqa: E402


def table(result: dict) -> str:
    probe = result["probe"]
    lines = [f"{'label':34} {'kind':7} {'seconds':>8} {'calls':>6} {'per clip':>9}"]
    for label, entry in sorted(probe["labels"].items(), key=lambda kv: -kv[1]["seconds"]):
        per_clip = f"{entry['per_clip_s']:.3f}" if "per_clip_s" in entry else ""
        lines.append(f"{label:34} {entry['kind']:7} {entry['seconds']:8.3f} {entry['calls']:6d} {per_clip:>9}")
    lines.append(f"wall {result['wall_s']:.2f} s (launch to exit; inside the process {probe['wall_s']:.2f} s), CPU "
                 f"{result['cpu_s']:.2f} s; model forward (union over threads) {probe['model_forward_s']:.2f} s; "
                 f"overhead {probe['overhead_s']:.2f} s = {probe['overhead_share']:.1%} of the process's wall")
    lines.append("peak RSS per phase (MiB): " + ", ".join(
        f"{name} {v['peak_rss_mib']} ({v['seconds']:.1f} s)" for name, v in probe["phases"].items()))
    lines.append(f"peak RSS: process tree {result['tree_peak_mib']:.0f} MiB, largest process "
                 f"{result['process_peak_mib']:.0f} MiB")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--who", choices=("phase", "api", "peer"), default="phase")
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--design", choices=("distinct", "shared"), default="distinct")
    parser.add_argument("--metrics", default="sim,sva,mcd,stoi")
    parser.add_argument("--wer", action="store_true", help="add WER with the tiny random openai-whisper")
    parser.add_argument("--warm", action="store_true", help="one untimed run first (page cache, numba cache)")
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON too")
    parser.add_argument("--work", type=Path)
    args = parser.parse_args(argv)
    metrics = args.metrics.split(",") + (["wer"] if args.wer and "wer" not in args.metrics else [])
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        work = Path(tmp)
        pairs = build_pairs(work, args.pairs, args.design)
        manifest, generated = write_manifest(pairs, work)
        targets, generated_files = {p["target"] for p in pairs}, {p["generated"] for p in pairs}
        spec = {"pairs": pairs, "metrics": metrics, "probe": True, "manifest": str(manifest), "generated": str(generated),
                "work": str(work), "peer_assets": str(peer_assets(work / "peer_assets")),
                "clips": {"ecapa": len(targets) + len(generated_files), "mcd": len(targets) + len(generated_files),
                          "stoi": 2 * len(pairs), "whisper": len(pairs), "dnsmos": len(pairs)}}
        if "wer" in metrics:
            from clonebench.core.hashing import sha256_file
            from tests.tiny_models import write_tiny_openai_whisper

            checkpoint = write_tiny_openai_whisper(work / "tiny-random.pt")
            spec["whisper"] = {"path": str(checkpoint), "sha256": sha256_file(checkpoint)}
        if args.warm:
            run_worker(args.who, spec, work, 0)
        result = run_worker(args.who, spec, work, 1)
    print(f"{args.who}: {len(pairs)} {args.design} pairs, {'/'.join(metrics)}, load average {os.getloadavg()[0]:.2f} "
          f"(per clip: per distinct file for ECAPA and MCD, per pair side for STOI, per pair for Whisper)")
    print(table(result))
    if args.json:
        print(json.dumps(result["probe"], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
