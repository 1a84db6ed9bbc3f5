#!/usr/bin/env python
"""Batched vs one-file-at-a-time scoring speed, SIM (ECAPA) and WER (faster-whisper base), printed as ratios.

(SIM's exact protocol embeds each clip alone, as ``verify_files`` does, so its ratio is about 1 by construction;
it stays here as a check that a batch costs nothing.)

Real speech from Debian's pocketsphinx-testdata (LibriVox and "cards" clips). Each scorer is loaded
once and warmed up; then the same items are scored one at a time and in batches of --batch-size, and
the wall times compared. On CPU the goal is >= 1.3x; when a CUDA device is present the same is
measured there too (goal >= 3x).

    python bench/score_batching.py [--items 24] [--batch-size 8] [--device cpu|cuda:0]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def items(count: int):
    from tests.conftest import CARDS, LIBRIVOX, score_item, sphinx_transcripts

    clips = [(LIBRIVOX / f"{k}.wav", t) for k, t in sorted(sphinx_transcripts(LIBRIVOX, "transcription").items())]
    clips += [(CARDS / f"{k}.wav", t) for k, t in sorted(sphinx_transcripts(CARDS, "cards.transcription").items())]
    return [score_item(clips[i % len(clips)][0], clips[(i + 1) % len(clips)][0], clips[i % len(clips)][1],
                       sample_id=str(i)) for i in range(count)]


def measure(scorer, work, batch_size: int) -> dict:
    scorer.score_batch(work[:batch_size])  # warm-up: lazy initialisation, allocator, kernels
    started = time.perf_counter()
    for item in work:
        scorer.score_batch([item])
    single = time.perf_counter() - started
    started = time.perf_counter()
    for start in range(0, len(work), batch_size):
        scorer.score_batch(work[start:start + batch_size])
    batched = time.perf_counter() - started
    return {"items": len(work), "batch_size": batch_size, "one_at_a_time_s": round(single, 3),
            "batched_s": round(batched, 3), "speedup": round(single / batched, 3)}


def run_device(device: str, count: int, batch_size: int) -> dict:
    from clonebench.core.hashing import HashCache
    from clonebench.evaluate.scorers.ecapa import EcapaScorer
    from clonebench.evaluate.scorers.whisper_faster import FasterWhisperScorer

    work = items(count)
    out = {}
    for name, scorer in (
        ("sim_ecapa", EcapaScorer({"threshold": 0.25, "local_dir": None, "allow_hub": False}, device, HashCache(None))),
        ("wer_faster_whisper_base", FasterWhisperScorer({
            "backend": "faster_whisper", "model": "base", "local_path": None, "sha256": None,
            "normalisation": "ascii_punctuation_removed_v2", "compute_type": "auto", "allow_hub": False},
            device, HashCache(None))),
    ):
        scorer.load()
        try:
            out[name] = measure(scorer, work, batch_size)
        finally:
            scorer.release()
    return out


def main() -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=24)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--device", action="append", help="device(s) to measure (default: cpu, and cuda:0 if present)")
    args = parser.parse_args()
    devices = args.device or (["cpu"] + (["cuda:0"] if torch.cuda.is_available() else []))
    results = {device: run_device(device, args.items, args.batch_size) for device in devices}
    print(json.dumps({"torch_threads": torch.get_num_threads(), "results": results}, indent=2))
    for device, per in results.items():
        goal = 3.0 if device.startswith("cuda") else 1.3
        for name, r in per.items():
            print(f"{device} {name}: batched vs one-at-a-time {r['speedup']:.2f}x (goal >= {goal}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
