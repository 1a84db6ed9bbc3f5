"""The CPU-bound scorer groups (MCD, DNSMOS, STOI: ``Scorer.cpu_bound``) scored by worker processes beside the
GPU groups, on the cores those leave free.

Threads cannot use a many-core host for them: parts of each scorer hold the GIL (librosa, torch_stoi's Python,
the per-item glue), so a thread pool stops scaling after a couple of cores. Here each worker is a process started
with ``spawn`` (never ``fork``: the parent holds OpenMP, CUDA and CTranslate2 threads), with every BLAS/OpenMP
pool at one thread, and loads its own copy of each scorer once (assets resolved and sha256-verified again in the
worker, through the shared hash cache). The parent keeps everything else: the scorer's provenance (from its own
loaded copy), the cache lookups and writes, the order of the records, the fail-fast (evaluate/scoring.py).

Numbers do not depend on the pool: a chunk of items is scored by ``chunk.score_chunk`` exactly as in the parent (same
too-short and validity rules, same per-item isolation), every scorer is a pure function of its item, and inside a
worker computation runs on one thread (``overlap.map_items`` is sequential there, ONNX Runtime sessions have one
thread, torch gets one), which for STOI is the thread count its fingerprint records.

How many chunks are in flight at once follows ``overlap.spare_cores()``: one worker beside CPU groups that share
their cores, all cores but those left to the GPU groups beside GPU groups, every core once the foreground is
done. ``evaluation.cpu_workers`` caps the pool (0: no pool; null: every core, and only on hosts of at least
``POOL_MIN_CORES`` cores and for runs of at least ``POOL_MIN_ITEMS`` items, below which starting the workers costs
more than it saves). In a worker STOI computes on one torch thread (its fingerprint says so), where an in-process
run and rvcbench use torch's default thread count: the float32 results may then differ in the last bit from
rvcbench's; ``evaluation.cpu_workers=0`` scores in this process, equal to rvcbench's to the bit.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Callable, Iterator

from clonebench.core.errors import ClonebenchError
from clonebench.evaluate.execution import overlap

POOL_MIN_ITEMS = 32
# below this many cores the pool costs more than it gives: on 2 cores a core-v1-shaped suite scored in 78 s wall /
# 133 s CPU / 4.7 GB with it and 82 s / 115 s / 4.8 GB without (2026-12-02, bench/suite_vs_peer.py), and a small
# suite's peak memory doubled (each worker loads torch and its scorers)
POOL_MIN_CORES = 4
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")
_worker: dict[str, Any] = {"hash_cache": None, "scorers": {}}


def pool_workers(setting: int | None, n_items: int, cores: int) -> int:
    """Worker processes for a run: 0 means score in this process (``evaluation.cpu_workers``: None = auto)."""
    if setting is not None:
        return max(0, int(setting))
    if n_items < POOL_MIN_ITEMS or cores < POOL_MIN_CORES:
        return 0
    return cores


def _init_worker(hash_cache_path: str | None) -> None:
    for name in THREAD_VARIABLES:  # before numpy, torch or ONNX Runtime start their thread pools
        os.environ[name] = "1"
    from multiprocessing.util import Finalize

    from clonebench.core.hashing import HashCache

    overlap.in_worker()
    _worker["hash_cache"] = HashCache(Path(hash_cache_path) if hash_cache_path else None)
    Finalize(None, _release_all, exitpriority=10)  # runs when the worker exits (staged asset links removed)


def _release_all() -> None:
    for scorer in _worker["scorers"].values():
        scorer.release()
    _worker["scorers"].clear()


def _scorer(group: str, backend: str, options: dict):
    key = json.dumps([group, backend, options], sort_keys=True, default=str)
    if key not in _worker["scorers"]:
        from clonebench.evaluate.protocols.registry import scorer_class

        scorer = scorer_class(group, backend)(options, "cpu", _worker["hash_cache"])
        scorer.load()
        import sys

        if "torch" in sys.modules:  # OMP_NUM_THREADS=1 already; say it to torch too
            sys.modules["torch"].set_num_threads(1)
        _worker["scorers"][key] = scorer
    return _worker["scorers"][key]


def _score_chunk(group: str, backend: str, options: dict, items: list):
    from clonebench.evaluate.execution.chunk import score_chunk

    return score_chunk(_scorer(group, backend, options), items)


def _call(group: str, backend: str, options: dict, method: str, *args):
    """``method(*args)`` of the worker's loaded scorer (e.g. ECAPA's ``embed_array``: evaluate/execution/ecapa_workers.py)."""
    return getattr(_scorer(group, backend, options), method)(*args)


def _warm(group: str, backend: str, options: dict, until: float) -> int:
    _scorer(group, backend, options)
    time.sleep(max(0.0, until - time.time()))  # hold this worker so that every worker takes one task
    return os.getpid()


class CpuPool:
    """Worker processes (started on first use) scoring chunks of a CPU-bound group's items."""

    threads = 1  # the thread count a pooled scorer computes with

    def __init__(self, workers: int, hash_cache_path: Path | None):
        self.workers = workers
        self.hash_cache_path = hash_cache_path
        self._executor: ProcessPoolExecutor | None = None

    def chunk_size(self, n_items: int, batch_size: int) -> int:
        """Items per task: at most the batch size, small enough that every worker gets about four tasks (the
        values never depend on it: each item is scored on its own)."""
        return max(1, min(batch_size, -(-n_items // (self.workers * 4))))

    def submit(self, group: str, backend: str, options: dict, method: str, *args):
        """A future of ``method(*args)`` run by a worker's copy of ``group``'s scorer (loaded once per worker)."""
        return self._pool().submit(_call, group, backend, options, method, *args)

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(max_workers=self.workers,
                                                 mp_context=multiprocessing.get_context("spawn"),
                                                 initializer=_init_worker,
                                                 initargs=(str(self.hash_cache_path) if self.hash_cache_path else None,))
        return self._executor

    def score(self, group: str, backend: str, options: dict, chunks: list[list],
              allowed: Callable[[], int]) -> Iterator[tuple[list, set]]:
        """``chunk.score_chunk`` of every chunk, in order, computed by the workers; at most ``allowed()`` chunks (and
        never more than the pool's workers) in flight at once."""
        pool = self._pool()
        waiting = deque(chunks)
        running: deque = deque()
        try:
            while waiting or running:
                limit = max(1, min(self.workers, allowed()))
                while waiting and len(running) < limit:
                    overlap.check_stop()
                    running.append(pool.submit(_score_chunk, group, backend, options, waiting.popleft()))
                yield running.popleft().result()
        except BrokenProcessPool as exc:
            raise ClonebenchError(f"a {group} scoring worker process died ({exc}); out of memory? Lower "
                                  "evaluation.cpu_workers, or set it to 0 to score in this process") from None
        finally:
            for future in running:
                future.cancel()

    def warm_up(self, group: str, backend: str, options: dict, hold_s: float = 3.0) -> int:
        """Start every worker and load ``group``'s scorer in each (benchmarks time the scoring without the
        start-up): rounds of one task per worker, each holding its worker ``hold_s``, until every worker has
        taken one (a worker still starting in the first round may leave its task to another); returns how many
        distinct workers loaded it."""
        pool = self._pool()
        seen: set[int] = set()
        for _ in range(4):
            until = time.time() + hold_s
            seen |= {f.result() for f in [pool.submit(_warm, group, backend, options, until)
                                          for _ in range(self.workers)]}
            if len(seen) >= self.workers:
                break
        return len(seen)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
