"""evaluate/execution/ecapa_workers.py's scheduling, with a thread pool standing in for the worker processes and a digest of
the file standing in for the embedding (the real workers' bytes: tests/integration/test_exact_conv.py)."""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import soundfile as sf

from clonebench.evaluate.execution import ecapa_workers
from clonebench.evaluate.execution.ecapa_workers import EmbeddingWorkers


def _embedding(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class ThreadPool:
    """CpuPool's submit/close/workers over threads; records what it was given."""

    started = 0

    def __init__(self, workers: int, hash_cache_path):
        self.workers = workers
        self.executor = ThreadPoolExecutor(workers)
        self.taken: list[str] = []
        ThreadPool.started += 1
        ThreadPool.last = self

    def submit(self, group, backend, options, method, path):
        assert (group, method) == ("ecapa", "embed_array")
        self.taken.append(Path(path).name)
        if Path(path).name.startswith("bad"):
            return self.executor.submit(lambda: 1 / 0)
        return self.executor.submit(_embedding, path)

    def close(self):
        self.executor.shutdown()


def _clips(tmp_path, seconds: list[float]) -> list[tuple[str, Path]]:
    out = []
    for k, s in enumerate(seconds):
        path = tmp_path / f"{'bad' if s < 0 else 'clip'}{k}.wav"
        sf.write(str(path), np.full(int(abs(s) * 8000), k / 100.0), 8000, subtype="PCM_16")
        out.append((f"key{k}", path))
    return out


def _workers(monkeypatch, here: list, explicit=True):
    import clonebench.evaluate.execution.cpu_pool as cpu_pool

    monkeypatch.setattr(cpu_pool, "CpuPool", ThreadPool)
    ThreadPool.started = 0

    def embed_here(path):
        here.append(Path(path).name)
        if Path(path).name.startswith("bad"):
            raise ValueError("unreadable")
        return _embedding(path)

    return EmbeddingWorkers(2, explicit, {"threshold": 0.25}, None, embed_here, lambda a: a)


def test_every_clip_is_embedded_once_by_one_process(tmp_path, monkeypatch):
    here: list[str] = []
    workers = _workers(monkeypatch, here)
    clips = _clips(tmp_path, [1.0] * 12)
    memo: dict = {}
    workers.plan(clips, memo)
    for k in range(0, 12, 4):
        workers.fill(clips[k:k + 4], memo)
        assert all(key in memo for key, _ in clips[k:k + 4])
    assert memo == {key: _embedding(path) for key, path in clips}
    taken = ThreadPool.last.taken
    assert sorted(taken + here) == sorted(p.name for _, p in clips)  # each clip by exactly one process
    assert taken and here
    workers.close()


def test_long_clips_are_embedded_here_alone_and_small_runs_start_no_worker(tmp_path, monkeypatch):
    here: list[str] = []
    workers = _workers(monkeypatch, here)
    clips = _clips(tmp_path, [1.0, 1.0, ecapa_workers.LONG_CLIP_S + 1, 1.0, 1.0, 1.0])
    memo: dict = {}
    workers.plan(clips[:3], memo)
    workers.fill(clips[:3], memo)
    assert "clip2.wav" in here and "clip2.wav" not in ThreadPool.last.taken
    assert workers._pool is None  # stopped for the long clip
    workers.fill(clips[3:], memo)
    assert ThreadPool.started == 2 and len(memo) == 6  # started again for a batch of short clips
    workers.close()

    small = _workers(monkeypatch, [], explicit=False)
    small.plan(clips[3:], {})
    assert small._pool is None  # 3 s of audio: below POOL_MIN_SECONDS, no worker started


def test_a_clip_a_worker_cannot_embed_raises_here_for_its_own_batch(tmp_path, monkeypatch):
    here: list[str] = []
    workers = _workers(monkeypatch, here)
    clips = _clips(tmp_path, [-1.0, 1.0, 1.0, 1.0])
    memo: dict = {}
    workers.plan(clips, memo)
    workers.fill(clips[2:], memo)  # another batch: the bad clip's error does not surface here
    try:
        workers.fill(clips[:2], memo)
        raised = None
    except ValueError as exc:
        raised = exc
    assert raised is not None and "bad0.wav" in here and "key0" not in memo
    workers.close()


def test_the_default_embeds_in_this_process_below_four_cores():
    """null: one process per core on hosts of 4+ cores; on 2 cores this process only (a worker doubled the peak
    memory for no gain there); a configured count is taken as asked (0 and 1: this process)."""
    assert ecapa_workers.processes_for(None, 2) == 1 and ecapa_workers.processes_for(None, 3) == 1
    assert ecapa_workers.processes_for(None, 4) == 4 and ecapa_workers.processes_for(None, 16) == 16
    assert ecapa_workers.processes_for(2, 2) == 2 and ecapa_workers.processes_for(0, 8) == 1


def test_without_worker_processes_a_batch_is_embedded_on_torchs_threads_each_at_one(tmp_path):
    """No pool (2 cores): the batch's short clips on as many threads as torch has, every call at one torch thread
    (the exact path's bits), a long clip left to the loop; a clip that fails there is embedded again by the loop,
    which raises for it; torch's thread count is restored."""
    import threading

    import pytest
    import torch

    from clonebench.evaluate.execution.exact_conv import torch_threads

    seen = []

    def embed_here(path):
        seen.append((Path(path).name, threading.current_thread().name, torch.get_num_threads()))
        if Path(path).name.startswith("bad"):
            raise ValueError("unreadable")
        return _embedding(path)

    clips = _clips(tmp_path, [1.0, 2.0, 1.5, ecapa_workers.LONG_CLIP_S + 1, 1.0])
    workers = EmbeddingWorkers(1, False, {}, None, embed_here, lambda a: a)
    memo: dict = {}
    with torch_threads(2):
        workers.fill(clips, memo)
        assert torch.get_num_threads() == 2
    assert memo == {key: _embedding(path) for key, path in clips}
    on_threads = [s for s in seen if s[1].startswith("clonebench-ecapa")]
    assert {s[0] for s in on_threads} == {"clip0.wav", "clip1.wav", "clip2.wav", "clip4.wav"}
    assert all(s[2] == 1 for s in on_threads)
    assert [s[0] for s in seen if s not in on_threads] == ["clip3.wav"]  # the long clip: by the loop, alone

    bad = _clips(tmp_path / "b" if (tmp_path / "b").mkdir() is None else tmp_path, [1.0, -1.0, 1.0])
    seen.clear()
    with torch_threads(2), pytest.raises(ValueError, match="unreadable"):
        EmbeddingWorkers(1, False, {}, None, embed_here, lambda a: a).fill(bad, {})
    assert [s[0] for s in seen].count("bad1.wav") == 2  # on a thread, then again by the loop, which raises
