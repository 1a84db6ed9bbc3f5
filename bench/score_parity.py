#!/usr/bin/env python
"""Parity and speed of the exact scorers on real speech, printed.

1. Max |difference| per metric and per kind of copy (16 kHz, 22.05 kHz 16-bit, 24 kHz 24-bit noisy,
   44.1 kHz float, 16 kHz stereo) between clonebench's scorers and the reference libraries called directly:
   SpeechBrain ``verify_files``, faster-whisper ``transcribe(path)`` (hypotheses: number that differ),
   ``speechmos.dnsmos.run(path, 16000)``, torch_stoi on upstream's loading, pymcd ``calculate_mcd``.
2. SIM (ECAPA) throughput: the exact default (each clip embedded alone) vs the previous batched scoring
   (length-sorted, zero-padded chunks of at most 8 s per forward pass), same clips, same device.
   Goal on CPU: the exact default within 10 % of the batched throughput.

    python bench/score_parity.py [--clips 5] [--repeat 3] [--device cpu|cuda:0]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def variants(folder: Path, count: int) -> list[dict]:
    from tests.conftest import LIBRIVOX, VARIANT_KINDS, sphinx_transcripts, write_variant

    clips = sorted(sphinx_transcripts(LIBRIVOX, "transcription").items())[:count]
    return [{"path": write_variant(LIBRIVOX / f"{k}.wav", kind, folder / f"{k}-{kind}.wav"), "kind": kind, "text": t}
            for k, t in clips for kind in VARIANT_KINDS]


def parity(clips: list[dict], device: str) -> dict:
    import speechmos.dnsmos
    from pymcd.mcd import Calculate_MCD

    from clonebench.evaluate.scorers.dnsmos import DNSMOSScorer
    from clonebench.evaluate.scorers.ecapa import EcapaScorer
    from clonebench.evaluate.scorers.mcd import MCDScorer
    from clonebench.evaluate.scorers.stoi import STOIScorer
    from clonebench.evaluate.scorers.whisper_faster import FasterWhisperScorer
    from clonebench.hashing import HashCache
    from tests.conftest import score_item
    from tests.integration.test_score_parity import upstream_stoi

    n = len(clips)
    pairs = [(clips[(i + 7) % n], clips[i]) for i in range(n)]
    items = [score_item(g["path"], t["path"], text=g["text"], sample_id=str(k)) for k, (t, g) in enumerate(pairs)]
    worst: dict[tuple[str, str], float] = {}

    def note(metric, kind, diff):
        worst[(metric, kind)] = max(worst.get((metric, kind), 0.0), abs(diff))

    ecapa = EcapaScorer({"threshold": 0.25, "local_dir": None, "allow_hub": False}, device, HashCache(None))
    ecapa.load()
    for (t, g), r in zip(pairs, ecapa.score_batch(items)):
        note("sim", g["kind"], r.values["sim"] - float(ecapa._model.verify_files(str(t["path"]), str(g["path"]))[0]))
    ecapa.release()
    dnsmos = DNSMOSScorer({"local_dir": None}, "cpu", HashCache(None))
    dnsmos.load()
    for (t, g), r in zip(pairs, dnsmos.score_batch(items)):
        note("dnsmos", g["kind"], r.values["dnsmos"] - float(speechmos.dnsmos.run(str(g["path"]), 16000)["ovrl_mos"]))
    dnsmos.release()
    stoi = STOIScorer({}, "cpu", HashCache(None))
    stoi.load()
    for (t, g), r in zip(pairs, stoi.score_batch(items)):
        note("stoi", g["kind"], r.values["stoi"] - upstream_stoi(t["path"], g["path"]))
    mcd = MCDScorer({}, "cpu", HashCache(None))
    mcd.load()
    direct = Calculate_MCD(MCD_mode="dtw")
    for (t, g), r in zip(pairs, mcd.score_batch(items)):
        note("mcd", g["kind"], r.values["mcd"] - float(direct.calculate_mcd(str(t["path"]), str(g["path"]))))
    whisper = FasterWhisperScorer({"backend": "faster_whisper", "model": "base", "local_path": None, "sha256": None,
                                   "normalisation": "ascii_punctuation_removed_v2", "compute_type": "auto",
                                   "allow_hub": False}, device, HashCache(None))
    whisper.load()
    for (t, g), r in zip(pairs, whisper.score_batch(items)):
        segments, _ = whisper._model.transcribe(str(g["path"]), language="en", task="transcribe", beam_size=1,
                                                best_of=1, temperature=0.0, condition_on_previous_text=False,
                                                without_timestamps=True, vad_filter=False)
        note("wer hypotheses differing", g["kind"], float(r.values["hypothesis"] != "".join(s.text for s in segments).strip()))
    whisper.release()
    return worst


def previous_batched_sim(scorer, items, budget_s: int = 8) -> list[float]:
    """The scoring this project used before: all clips of a batch length-sorted, zero-padded into chunks of at
    most ``budget_s`` seconds of padded audio, one forward pass per chunk (scores depended on the neighbours)."""
    import torch

    signals = [scorer.load_clip(Path(i.target_path)) for i in items] + [scorer.load_clip(i.generated_path) for i in items]
    order = sorted(range(len(signals)), key=lambda k: len(signals[k]))
    out: list = [None] * len(signals)
    chunk: list[int] = []

    def flush():
        longest = max(len(signals[k]) for k in chunk)
        batch = torch.zeros(len(chunk), longest, device=signals[0].device)
        for row, k in enumerate(chunk):
            batch[row, : len(signals[k])] = signals[k]
        lens = torch.tensor([len(signals[k]) / longest for k in chunk], device=batch.device)
        with torch.inference_mode():
            for k, e in zip(chunk, scorer._model.encode_batch(batch, lens, normalize=False)):
                out[k] = e
        chunk.clear()

    for k in order:
        if chunk and (len(chunk) + 1) * len(signals[k]) > budget_s * 16000:
            flush()
        chunk.append(k)
    flush()
    n = len(items)
    with torch.inference_mode():
        return [float(scorer._model.similarity(out[i], out[n + i]).reshape(-1)[0]) for i in range(n)]


def throughput(clips: list[dict], device: str, repeat: int, batch_size: int = 8) -> dict:
    from clonebench.evaluate.scorers.ecapa import EcapaScorer
    from clonebench.hashing import HashCache
    from tests.conftest import score_item

    n = len(clips)
    items = [score_item(clips[i]["path"], clips[(i + 7) % n]["path"], sample_id=str(i)) for i in range(n)]
    scorer = EcapaScorer({"threshold": 0.25, "local_dir": None, "allow_hub": False}, device, HashCache(None))
    scorer.load()
    scorer.score_batch(items[:2]), previous_batched_sim(scorer, items[:2])  # warm-up
    times = {"exact": [], "previous_batched": []}
    cpu = {"exact": [], "previous_batched": []}
    for _ in range(repeat):  # interleaved, best of ``repeat`` (the machine is shared)
        for name, fn in (("exact", lambda b: scorer.score_batch(b)), ("previous_batched", lambda b: previous_batched_sim(scorer, b))):
            started, started_cpu = time.perf_counter(), time.process_time()
            for s in range(0, n, batch_size):
                fn(items[s:s + batch_size])
            times[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - started_cpu)
    scorer.release()
    best = {k: min(v) for k, v in times.items()}
    best_cpu = {k: min(v) for k, v in cpu.items()}
    return {"pairs": n, "exact_s": round(best["exact"], 3), "previous_batched_s": round(best["previous_batched"], 3),
            "exact_throughput_vs_previous": round(best["previous_batched"] / best["exact"], 3),
            "exact_cpu_s": round(best_cpu["exact"], 3), "previous_batched_cpu_s": round(best_cpu["previous_batched"], 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clips", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--skip-parity", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        clips = variants(Path(folder), args.clips)
        if not args.skip_parity:
            print("max |clonebench - reference| per metric and kind of copy:")
            for (metric, kind), diff in sorted(parity(clips, args.device).items()):
                print(f"  {metric:26s} {kind:18s} {diff:.3g}")
        result = throughput(clips, args.device, args.repeat)
        print(f"SIM (ECAPA) on {args.device}, {result['pairs']} pairs: exact default {result['exact_s']} s, previous "
              f"batched {result['previous_batched_s']} s; exact throughput = "
              f"{result['exact_throughput_vs_previous']:.2f}x the previous (goal >= 0.90x); process CPU time "
              f"{result['exact_cpu_s']} s vs {result['previous_batched_cpu_s']} s "
              f"({result['previous_batched_cpu_s'] / result['exact_cpu_s']:.2f}x)")


if __name__ == "__main__":
    main()
