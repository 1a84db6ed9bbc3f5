#!/usr/bin/env python
"""Where ECAPA's CPU time goes, and why its thread count is fixed: one clip embedded as the SIM protocol does
(``verify_files`` steps: SpeechBrain's loader, ``audio_normalizer``, one forward pass, no padding) in a fresh process
per setting, with torch's default thread count (the protocol: the bits of an embedding follow it) and with one
thread; wall and CPU seconds, a digest of the embedding, and oneDNN's own clock per primitive
(``ONEDNN_VERBOSE=1``, summed by implementation).

With more than one thread torch sends ECAPA's 1x1 convolutions to oneDNN (``jit_1x1``); with one thread it computes
them natively (a GEMM), a different summation order, hence different bits. The third setting is clonebench's:
one thread with those layers sent to oneDNN as at two threads (evaluate/execution/exact_conv.py), which must give the
two-thread digest; its CPU over the two-thread CPU is what the exact path saves per clip on this host. Each
setting runs ``--repeat`` times, alternating, in fresh processes. Not in CI.

    python bench/ecapa_threads.py [--clip WAV] [--seconds 20] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _speech_pairs import REPO, peer_assets  # noqa: E402

CHILD = r"""
import hashlib, json, resource, sys, time
import torch
from speechbrain.inference.speaker import SpeakerRecognition
from speechbrain.dataio import audio_io
model_dir, savedir, clip, seconds, threads = sys.argv[1:6]
exact = threads == "exact"
if exact or int(threads):
    torch.set_num_threads(1 if exact else int(threads))
model = SpeakerRecognition.from_hparams(source=model_dir, savedir=savedir, overrides={"pretrained_path": model_dir},
                                        run_opts={"device": "cpu"})
model.eval()
if exact:
    from clonebench.evaluate.execution import exact_conv
    assert exact_conv.unverified_reason() is None, exact_conv.unverified_reason()
    exact_conv.install(model.mods)
signal, rate = audio_io.load(clip, channels_first=False)
signal = signal[: int(float(seconds) * rate)]
batch = model.audio_normalizer(signal, rate).unsqueeze(0)
usage = lambda: (lambda r: r.ru_utime + r.ru_stime)(resource.getrusage(resource.RUSAGE_SELF))
c0, t0 = usage(), time.perf_counter()
with torch.inference_mode():
    embedding = model.encode_batch(batch, None, normalize=False)
wall, cpu = time.perf_counter() - t0, usage() - c0
print("RESULT " + json.dumps({"threads": torch.get_num_threads(), "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                              "digest": hashlib.sha256(embedding.numpy().tobytes()).hexdigest()[:16]}))
"""


def run(model_dir: Path, savedir: str, clip: Path, seconds: float, threads) -> dict:
    env = {"ONEDNN_VERBOSE": "1", "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([sys.executable, "-c", CHILD, str(model_dir), savedir, str(clip), str(seconds),
                           str(threads)], capture_output=True, text=True, env=env, check=True)
    result, kernels = {}, defaultdict(lambda: [0, 0.0])
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[7:])
        elif line.startswith("onednn_verbose") and ",primitive,exec," in line:
            fields = line.split(",")
            key = f"{fields[5]} {fields[6]}"
            kernels[key][0] += 1
            kernels[key][1] += float(fields[-1])
    result["onednn_ms"] = {k: [n, round(ms, 1)] for k, (n, ms) in sorted(kernels.items(), key=lambda kv: -kv[1][1])}
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clip", type=Path, default=None, help="a speech WAV (default: a LibriVox test clip)")
    parser.add_argument("--seconds", type=float, default=20.0, help="embed the clip's first N seconds")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each setting, alternating")
    args = parser.parse_args()
    clip = args.clip
    if clip is None:
        clips = sorted(Path("/usr/share/pocketsphinx/test/data/librivox").glob("*.wav"))
        if not clips:
            raise SystemExit("no --clip given and no pocketsphinx-testdata clip: run `bash scripts/setup.sh`")
        clip = clips[0]
    with tempfile.TemporaryDirectory(prefix="ecapa-threads-") as tmp:
        model_dir = peer_assets(Path(tmp) / "assets") / "spkrec-ecapa-voxceleb"
        settings = {"default_threads": 0, "two_threads": 2, "one_thread": 1, "exact_one_thread": "exact"}
        rows: dict[str, list[dict]] = {name: [] for name in settings}
        for _ in range(max(1, args.repeat)):
            for name, threads in settings.items():
                rows[name].append(run(model_dir, str(Path(tmp) / "save"), clip, args.seconds, threads))
    cpu = {name: sum(r["cpu_s"] for r in runs) for name, runs in rows.items()}
    wall = {name: sum(r["wall_s"] for r in runs) for name, runs in rows.items()}
    digests = {name: sorted({r["digest"] for r in runs}) for name, runs in rows.items()}
    print(json.dumps({"clip": str(clip), "seconds": args.seconds, "repo": str(REPO), "runs": rows,
                      "digests": digests,
                      "one_thread_same_bits_as_two": digests["one_thread"] == digests["two_threads"],
                      "exact_same_bits_as_two": digests["exact_one_thread"] == digests["two_threads"],
                      "cpu_ratio_two_over_exact": round(cpu["two_threads"] / cpu["exact_one_thread"], 2),
                      "wall_ratio_two_over_exact": round(wall["two_threads"] / wall["exact_one_thread"], 2),
                      "cpu_ratio_two_over_one": round(cpu["two_threads"] / cpu["one_thread"], 2)}, indent=2))
    return 0 if digests["exact_one_thread"] == digests["two_threads"] else 1


if __name__ == "__main__":
    sys.exit(main())
