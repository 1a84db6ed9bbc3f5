"""What clonebench guarantees about the CPU thread count, checked in fresh processes with 1 and 2 threads (and the
host's core count where it is larger), whatever the host's BLAS and torch do with threads:

- Pinned: scoring pins numpy's and scipy's BLAS to one thread (``threads.pin_blas_threads``, called by
  ``scoring.run_group_jobs``), so the features computed with it (faster-whisper's log-mel, DNSMOS's P.808 mel)
  have the same bits at every thread count, the bits of a one-thread process.
- Fingerprinted: a scorer whose numbers may follow the thread count (``Scorer.threads_change_numbers``) carries
  the count whose bits it computes in its fingerprint on a CPU (``Scorer.computing_threads``: ECAPA's one-thread
  exact path computes the two-thread bits and says 2), so records of other bits are never mixed;
  a thread-independent one (MCD, DNSMOS) leaves it out, and its values are then equal at every thread count (one
  fingerprint, one set of numbers). On a GPU no scorer's fingerprint carries it (evaluate/execution/device.py).

Whether the host's libraries themselves give other bits with another thread count (unpinned OpenBLAS, torch's
ECAPA and STOI, openai-whisper's torch log-mel) is a fact about the host, not a behaviour of clonebench: it is
recorded (``record_property``, and a printed ``host fact`` line under ``-s``), never asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import LIBRIVOX, REPO, compose

# One fresh process: ``threads`` torch/BLAS/OpenMP threads (environment and torch.set_num_threads).
# raw: the libraries' own outputs, nothing pinned (host facts). scoring: clonebench's scoring path (run_group,
# which pins BLAS), the provenance it records, then the BLAS-computed features under that pin.
PROBE = r"""
import hashlib, json, sys
from pathlib import Path
from types import SimpleNamespace
threads, mode, clips_dir, work = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
import numpy, torch
torch.set_num_threads(threads)
clips = sorted(clips_dir.glob("*.wav"))[:3]
digest = lambda arrays: hashlib.sha256(b"".join(numpy.ascontiguousarray(a).tobytes() for a in arrays)).hexdigest()
out = {"threads": threads, "torch_threads": torch.get_num_threads()}


def features():
    from faster_whisper.audio import decode_audio
    from faster_whisper.feature_extractor import FeatureExtractor
    from clonebench.evaluate.protocols.audio import load_librosa_16k
    from clonebench.evaluate.scorers.dnsmos_batched import p808_features, windows
    extractor = FeatureExtractor()
    out["faster_whisper_mel"] = digest(extractor(decode_audio(str(c))) for c in clips)
    out["dnsmos_p808_features"] = digest(p808_features(windows(load_librosa_16k(c))[0][:4]) for c in clips)


if mode == "raw":
    features()
    import whisper
    from whisper.audio import load_audio
    out["openai_whisper_mel"] = digest(whisper.log_mel_spectrogram(load_audio(str(c)), 80, padding=480000).numpy()
                                       for c in clips)
    from clonebench.evaluate.scorers.ecapa import EcapaScorer
    from clonebench.core.hashing import HashCache
    scorer = EcapaScorer({"threshold": 0.25, "local_dir": None, "allow_hub": False}, "cpu", HashCache(None))
    scorer.load()
    out["ecapa_embeddings"] = digest(scorer.embed(c).numpy() for c in clips)
else:
    from threadpoolctl import threadpool_info
    from clonebench.core.hashing import HashCache
    from clonebench.evaluate.execution.cache import MetricCache
    from clonebench.evaluate.scoring import run_group
    from tests.conftest import score_item
    options = {"ecapa": {"threshold": 0.25, "local_dir": None, "allow_hub": False}, "mcd": {},
               "dnsmos": {"local_dir": None}, "stoi": {}, "whisper": {"backend": "faster_whisper"}}
    settings = SimpleNamespace(evaluation=SimpleNamespace(scorer_options=options, batch_size=2))
    items = [score_item(c, clips[(k + 1) % len(clips)], sample_id=f"clip{k}") for k, c in enumerate(clips)]
    out["groups"] = {}
    for group in ("dnsmos", "mcd", "stoi", "ecapa"):
        provenance, records = run_group(group, settings, "cpu", items, MetricCache(work / group, None),
                                        HashCache(None))
        assert all(r.ok for r in records.values()), {k: r.error for k, r in records.items() if not r.ok}
        out["groups"][group] = {"fingerprint": provenance["fingerprint"],
                                "cpu_threads": provenance["execution"].get("cpu_threads"),
                                "values": {k: r.values for k, r in sorted(records.items())}}
    out["blas_threads"] = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    features()  # under the pin the scoring path left in force
print(json.dumps(out))
"""


def probe(threads: int, mode: str, work) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]), "HF_HUB_OFFLINE": "1",
           "OMP_NUM_THREADS": str(threads), "OPENBLAS_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    work.mkdir(parents=True)
    out = subprocess.run([sys.executable, "-c", PROBE, str(threads), mode, str(LIBRIVOX), str(work)],
                         capture_output=True, text=True, env=env, timeout=900, cwd=work)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["torch_threads"] == threads
    return result


def host_fact(record_property, name: str, differs: bool) -> None:
    """A property of the host's libraries: recorded for the reader, never asserted."""
    record_property(f"host_{name}_differs_1_vs_2_threads", differs)
    print(f"host fact: {name} {'differs' if differs else 'is equal'} between 1 and 2 threads")


def thread_counts() -> list[int]:
    from clonebench.evaluate.execution.threads import available_cores

    return sorted({1, 2, available_cores()})


@pytest.mark.slow
def test_pinned_scoring_is_equal_across_thread_counts_and_fingerprints_carry_the_count(tmp_path, record_property):
    from clonebench.evaluate.protocols.registry import scorer_class

    raw = {t: probe(t, "raw", tmp_path / f"raw{t}") for t in (1, 2)}
    counts = thread_counts()
    scoring = {t: probe(t, "scoring", tmp_path / f"scoring{t}") for t in counts}

    # the host's libraries, unpinned: recorded, whichever way they go
    for name in ("faster_whisper_mel", "dnsmos_p808_features", "openai_whisper_mel", "ecapa_embeddings"):
        host_fact(record_property, name, raw[1][name] != raw[2][name])
    for group in ("stoi", "ecapa"):
        host_fact(record_property, f"{group}_scores",
                  scoring[1]["groups"][group]["values"] != scoring[2]["groups"][group]["values"])

    # pinned: every BLAS on one thread, so the BLAS-computed features are a one-thread process's, at every count
    for t in counts:
        assert scoring[t]["blas_threads"] and set(scoring[t]["blas_threads"]) == {1}, (t, scoring[t]["blas_threads"])
        assert scoring[t]["faster_whisper_mel"] == raw[1]["faster_whisper_mel"], t
        assert scoring[t]["dnsmos_p808_features"] == raw[1]["dnsmos_p808_features"], t

    # fingerprinted: the count whose bits the scorer computed, exactly where its numbers may depend on it; ECAPA's
    # one-thread exact path computes the two-thread bits at every count (evaluate/execution/exact_conv.py), and says 2
    from clonebench.evaluate.execution.exact_conv import unverified_reason
    from clonebench.evaluate.scorers.ecapa import PROTOCOL_THREADS

    for group in ("dnsmos", "mcd", "stoi", "ecapa"):
        seen = {t: scoring[t]["groups"][group] for t in counts}
        if group == "ecapa" and unverified_reason() is None:
            assert {seen[t]["cpu_threads"] for t in counts} == {PROTOCOL_THREADS}
            assert len({seen[t]["fingerprint"] for t in counts}) == 1  # shared across hosts and thread counts
        elif scorer_class(group, "faster_whisper").threads_change_numbers:
            assert [seen[t]["cpu_threads"] for t in counts] == counts, group
            assert len({seen[t]["fingerprint"] for t in counts}) == len(counts), group  # never mixed
        else:
            assert {seen[t]["cpu_threads"] for t in counts} == {None}, group
            assert len({seen[t]["fingerprint"] for t in counts}) == 1, group  # shared across hosts
        # one fingerprint, one set of numbers: records that share a fingerprint are interchangeable
        for a in counts:
            for b in counts:
                if seen[a]["fingerprint"] == seen[b]["fingerprint"]:
                    assert seen[a]["values"] == seen[b]["values"], (group, a, b)


@pytest.mark.parametrize("key", ["ecapa", "whisper/openai_whisper", "whisper/faster_whisper", "mcd", "dnsmos", "stoi",
                                 "utmos", "emotion"])
def test_every_scorer_carries_the_thread_count_exactly_where_numbers_may_depend_on_it(key):
    """Every registered scorer, as a run configures it: on a CPU its fingerprint differs between 1 and 2 threads
    when ``threads_change_numbers``, and is the same otherwise; on a GPU the count never enters it."""
    from clonebench.core.config_reader import ConfigReader
    from clonebench.core.hashing import HashCache
    from clonebench.evaluate.protocols.registry import SCORERS, scorer_class
    from clonebench.evaluate.scoring import fingerprint_threads, scorer_provenance
    from clonebench.evaluate.settings import read_evaluation

    assert key in SCORERS
    group, _, backend = key.partition("/")
    options = dict(read_evaluation(ConfigReader(compose("demo"), "demo")).scorer_options[group])
    if backend:
        options["backend"] = backend
    if backend == "openai_whisper":
        options["model"] = "medium"  # a locked checkpoint (the demo's base is locked for faster-whisper only)
    if group == "utmos":
        options["sha256"] = "a" * 64  # its weights carry no lock of their own: a run must give one
    cls = scorer_class(group, backend or "faster_whisper")
    scorer = cls(options, "cpu", HashCache(None))
    blocks = {t: scorer_provenance(scorer, 8, fingerprint_threads(scorer, False, t)) for t in (1, 2)}
    if cls.threads_change_numbers:
        assert [blocks[t]["execution"]["cpu_threads"] for t in (1, 2)] == [1, 2]
        assert blocks[1]["fingerprint"] != blocks[2]["fingerprint"]
    else:
        assert "cpu_threads" not in blocks[1]["execution"] and "cpu_threads" not in blocks[2]["execution"]
        assert blocks[1]["fingerprint"] == blocks[2]["fingerprint"]
    if cls.uses_gpu:
        assert fingerprint_threads(cls(options, "cuda:0", HashCache(None)), False, 2) is None
