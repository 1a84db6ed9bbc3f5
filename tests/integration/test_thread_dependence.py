"""Which numbers depend on the CPU thread count, shown on real speech with 1 vs 2 threads (fresh processes).

- ECAPA on a CPU (torch): embeddings differ in their last bits, so a CPU scorer's fingerprint keeps its thread
  count (evaluate/device.py).
- The CPU side of the GPU scorers: openai-whisper's log-mel (torch) is the same with 1 or 2 threads;
  faster-whisper's log-mel and DNSMOS's P.808 features (numpy's OpenBLAS) differ, unless numpy's BLAS is pinned
  to one thread, which scoring does (``threads.pin_blas_threads``). So on a GPU the thread count stays out of the
  fingerprint, and shards scored on nodes with different core counts merge.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import LIBRIVOX, REPO

PROBE = r"""
import hashlib, json, sys
from pathlib import Path
threads, pin = int(sys.argv[1]), sys.argv[2] == "pin"
import numpy, torch
torch.set_num_threads(threads)
from clonebench.evaluate.threads import pin_blas_threads
if pin:
    pin_blas_threads()
clips = sorted(Path(sys.argv[3]).glob("*.wav"))[:3]
digest = lambda arrays: hashlib.sha256(b"".join(numpy.ascontiguousarray(a).tobytes() for a in arrays)).hexdigest()
out = {}
import whisper
from whisper.audio import load_audio
out["openai_whisper_mel"] = digest(whisper.log_mel_spectrogram(load_audio(str(c)), 80, padding=480000).numpy()
                                   for c in clips)
from faster_whisper.audio import decode_audio
from faster_whisper.feature_extractor import FeatureExtractor
extractor = FeatureExtractor()
out["faster_whisper_mel"] = digest(extractor(decode_audio(str(c))) for c in clips)
from clonebench.evaluate.audio import load_librosa_16k
from clonebench.evaluate.scorers.dnsmos_batched import p808_features, windows
out["dnsmos_p808_features"] = digest(p808_features(windows(load_librosa_16k(c))[0][:4]) for c in clips)
if sys.argv[4] == "ecapa":
    from clonebench.evaluate.scorers.ecapa import EcapaScorer
    from clonebench.core.hashing import HashCache
    scorer = EcapaScorer({"threshold": 0.25, "local_dir": None, "allow_hub": False}, "cpu", HashCache(None))
    scorer.load()
    out["ecapa_embeddings"] = digest(scorer.embed(c).numpy() for c in clips)
print(json.dumps(out))
"""


def probe(threads: int, pin: bool, ecapa: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1",
           "OMP_NUM_THREADS": str(threads), "OPENBLAS_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    out = subprocess.run([sys.executable, "-c", PROBE, str(threads), "pin" if pin else "free", str(LIBRIVOX),
                          "ecapa" if ecapa else "-"], capture_output=True, text=True, env=env, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_which_numbers_follow_the_thread_count():
    one, two = probe(1, False, True), probe(2, False, True)
    assert one["ecapa_embeddings"] != two["ecapa_embeddings"]  # torch on a CPU: the count stays in the fingerprint
    assert one["openai_whisper_mel"] == two["openai_whisper_mel"]
    assert one["faster_whisper_mel"] != two["faster_whisper_mel"]  # numpy's BLAS, free: follows the cores
    assert one["dnsmos_p808_features"] != two["dnsmos_p808_features"]
    pinned_one, pinned_two = probe(1, True, False), probe(2, True, False)
    assert pinned_two["faster_whisper_mel"] == pinned_one["faster_whisper_mel"] == one["faster_whisper_mel"]
    assert pinned_two["dnsmos_p808_features"] == pinned_one["dnsmos_p808_features"] == one["dnsmos_p808_features"]
