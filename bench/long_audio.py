#!/usr/bin/env python
"""Peak resident memory of each scorer on one long pair (5 minutes by default) vs a 30 s pair, printed per scorer.

The pair is real LibriVox speech (pocketsphinx-testdata) repeated to the length: the target at 16 kHz, the
"generated" clip the same speech at 24 kHz with a little noise and a 0.2 s shift. Each scorer runs in its own
process (``ru_maxrss`` is per process): the growth is the peak during scoring minus the resident size once the
model is loaded, so it is what the clip's length costs.

    python bench/long_audio.py [--seconds 300] [--short 30] [--scorers mcd,ecapa,dnsmos,stoi,whisper]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))
SCORERS = ("mcd", "ecapa", "dnsmos", "stoi", "whisper")
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")


def write_pair(folder: Path, seconds: float) -> tuple[Path, Path, str]:
    import numpy as np
    import soundfile as sf
    from scipy.signal import resample_poly

    from tests.conftest import sphinx_transcripts

    texts = sphinx_transcripts(LIBRIVOX, "transcription")
    clips = [(sf.read(str(LIBRIVOX / f"{k}.wav"))[0], t) for k, t in sorted(texts.items())]
    audio, words = [], []
    while sum(len(a) for a in audio) < seconds * 16000:
        for samples, text in clips:
            audio += [samples, np.zeros(4800)]
            words.append(text)
    target = np.concatenate(audio)[: int(seconds * 16000)]
    generated = resample_poly(np.concatenate([np.zeros(3200), target]), 3, 2)
    generated += np.random.default_rng(0).normal(0, 0.003, len(generated))
    paths = folder / f"target_{seconds:g}s.wav", folder / f"generated_{seconds:g}s.wav"
    sf.write(str(paths[0]), target, 16000, subtype="PCM_16")
    sf.write(str(paths[1]), np.clip(generated, -1, 1), 24000, subtype="PCM_16")
    return paths[0], paths[1], " ".join(words)


def scorer_for(name: str):
    from clonebench.core.hashing import HashCache

    cache = HashCache(None)
    if name == "mcd":
        from clonebench.evaluate.scorers.mcd import MCDScorer
        return MCDScorer({}, "cpu", cache)
    if name == "ecapa":
        from clonebench.evaluate.scorers.ecapa import EcapaScorer
        return EcapaScorer({"threshold": 0.25, "local_dir": None, "allow_hub": False}, "cpu", cache)
    if name == "dnsmos":
        from clonebench.evaluate.scorers.dnsmos import DNSMOSScorer
        return DNSMOSScorer({"local_dir": None}, "cpu", cache)
    if name == "stoi":
        from clonebench.evaluate.scorers.stoi import STOIScorer
        return STOIScorer({}, "cpu", cache)
    from clonebench.evaluate.scorers.whisper_faster import FasterWhisperScorer
    return FasterWhisperScorer({"backend": "faster_whisper", "model": "base", "local_path": None, "sha256": None,
                                "normalisation": "ascii_punctuation_removed_v2", "compute_type": "auto",
                                "allow_hub": False}, "cpu", cache)


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(name: str, target: Path, generated: Path, text: str) -> dict:
    from tests.conftest import score_item

    scorer = scorer_for(name)
    scorer.load()
    loaded = rss_mib()
    started = time.perf_counter()
    [record] = scorer.score_batch([score_item(generated, target, text=text, language="EN")])
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    values = {k: v for k, v in record.values.items() if k in ("mcd", "sim", "dnsmos", "stoi", "wer", "cer")}
    return {"loaded_mib": round(loaded, 1), "peak_mib": round(peak, 1), "growth_mib": round(peak - loaded, 1),
            "score_s": round(seconds, 2), "values": values, "error": record.error}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--short", type=float, default=30)
    parser.add_argument("--scorers", default=",".join(SCORERS))
    parser.add_argument("--child", nargs=4, metavar=("SCORER", "TARGET", "GENERATED", "TEXT_FILE"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, target, generated, text_file = args.child
        print(json.dumps(child(name, Path(target), Path(generated), Path(text_file).read_text())))
        return 0
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for seconds in (args.short, args.seconds):
            target, generated, text = write_pair(Path(tmp), seconds)
            text_file = Path(tmp) / f"text_{seconds:g}.txt"
            text_file.write_text(text)
            for name in args.scorers.split(","):
                done = subprocess.run([sys.executable, __file__, "--child", name, str(target), str(generated),
                                       str(text_file)], capture_output=True, text=True)
                if done.returncode != 0:
                    raise SystemExit(f"{name} at {seconds:g} s failed:\n{done.stderr[-3000:]}")
                results.setdefault(name, {})[f"{seconds:g}s"] = json.loads(done.stdout.strip().splitlines()[-1])
                print(f"{name} {seconds:g}s: {results[name][f'{seconds:g}s']}", flush=True)
    print(json.dumps(results, indent=2))
    short, long = f"{args.short:g}s", f"{args.seconds:g}s"
    print(f"\n{'scorer':<8} {'peak MiB ' + short:>16} {'peak MiB ' + long:>16} {'growth ' + short:>14} "
          f"{'growth ' + long:>14} {'score s ' + long:>14}")
    for name, by_length in results.items():
        a, b = by_length[short], by_length[long]
        print(f"{name:<8} {a['peak_mib']:>16.1f} {b['peak_mib']:>16.1f} {a['growth_mib']:>14.1f} "
              f"{b['growth_mib']:>14.1f} {b['score_s']:>14.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
