"""ECAPA embeddings on one-thread processes, one per core: this process and ``processes - 1`` CPU-pool workers; and,
while no worker runs (hosts under ``WORKERS_MIN_CORES`` cores, small runs), on threads of this process, as many as
torch has, each embedding on one torch thread with one model shared (a few MiB of activations per thread instead
of a process with torch and the model).

Each clip is embedded alone (a pure function of its bytes), by whichever process takes it, on one torch thread with
the multi-thread convolution kernels (evaluate/execution/exact_conv.py), so an embedding's bits never depend on which process,
in which order or beside what it was computed. Each worker loads the model once (its files sha256-verified again
through the shared hash cache) and returns the embedding as a float32 array; this process keeps the content-keyed
memo, the similarities and the records (evaluate/scorers/ecapa.py).

The clips a run needs are queued in the order its batches need them (``plan``); the workers keep two clips each in
flight from the front of that queue across batch boundaries, while this process embeds the clips its current batch
still lacks. A worker costs a process with torch, SpeechBrain and the model (see docs/performance.md) and a few
seconds of start-up, so the workers start only for runs with enough audio (``POOL_MIN_SECONDS``) unless
``evaluation.ecapa.workers`` asks for them. ECAPA's pass over a clip grows ~15.6 MiB per second of audio, so clips
longer than ``LONG_CLIP_S`` never go to a worker: this process embeds them alone, after stopping the workers (they
start again when enough short audio is left), so the peak memory is one process with the model and one long clip,
as the peer's.
"""

from __future__ import annotations

import functools
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, as_completed, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Callable

from clonebench.core.errors import ClonebenchError

# seconds of audio a run's clips must add up to before workers start: below it, starting a worker (torch,
# SpeechBrain, the model: ~5 s of CPU) costs more than it saves
POOL_MIN_SECONDS = 120.0
LONG_CLIP_S = 30.0  # longer clips (or of unknown length) are embedded by this process only (~470 MiB of activations)
IN_FLIGHT_PER_WORKER = 2
# cores below which the default (null) embeds in this process only: on 2 cores its one ECAPA thread and the
# overlapped MCD/DNSMOS thread already use both, and a worker (a second torch + model process) cost 1,853 instead of
# 1,059 MiB of peak memory for no measured gain (docs/performance.md)
WORKERS_MIN_CORES = 4


def processes_for(setting: int | None, cores: int) -> int:
    """Processes that embed (this one included): ``evaluation.ecapa.workers``; None = one per core on hosts with
    ``WORKERS_MIN_CORES`` cores or more, else this process only."""
    if setting is None:
        return cores if cores >= WORKERS_MIN_CORES else 1
    return max(1, int(setting))


class EmbeddingWorkers:
    """Fills ``memo`` (key -> embedding) for the clips asked for, using this process and the pool's workers."""

    def __init__(self, processes: int, explicit: bool, options: dict, hash_cache_path: Path | None,
                 embed_here: Callable[[Path], object], from_array: Callable[[object], object]):
        self.processes = processes
        self.explicit = explicit  # configured: start the workers whatever the run's size
        self.options = options
        self.hash_cache_path = hash_cache_path
        self.embed_here = embed_here
        self.from_array = from_array
        self._pool = None
        self._queue: deque[tuple[str, Path]] = deque()
        self._queued: set[str] = set()
        self._running: dict = {}  # future -> key
        self._seconds: dict[str, float] = {}  # key -> the clip's duration (its header), once per clip

    def plan(self, clips: list[tuple[str, Path]], memo: dict, start: bool = True) -> None:
        """Queue the clips (key, path) not yet embedded, in the order they will be needed; start the workers when
        the run is big enough. With no worker to start (one process) nothing is queued: only the clips' lengths
        are kept, so that embedding each clip does not rescan a queue of the whole run."""
        for key, path in clips:
            if key not in memo and key not in self._queued and key not in self._seconds:
                self._seconds[key] = seconds = _seconds(path)
                if seconds <= LONG_CLIP_S and self.processes > 1:
                    self._queue.append((key, path))
                    self._queued.add(key)
        if start:
            self._start_if_worth()

    def _start_if_worth(self) -> None:
        if self._pool is None and self.processes > 1 and self._queue and (
                self.explicit or sum(self._seconds[k] for k, _ in self._queue) >= POOL_MIN_SECONDS):
            from clonebench.evaluate.execution.cpu_pool import CpuPool

            self._pool = CpuPool(self.processes - 1, self.hash_cache_path)

    def fill(self, clips: list[tuple[str, Path]], memo: dict) -> None:
        """Every clip of ``clips`` into ``memo``: this process embeds those no worker has taken yet (the workers
        start only for a batch without a long clip left to embed)."""
        self.plan(clips, memo, start=not any(k not in memo and self._seconds.get(k, float("inf")) > LONG_CLIP_S
                                             for k, _ in clips if k in self._seconds))
        needed = [key for key, _ in clips]
        paths = dict(clips)
        if self._pool is None:
            self._embed_on_threads(paths, memo)
        while True:
            self._collect(memo)
            missing = [k for k in needed if k not in memo]
            if not missing:
                return
            taken = set(self._running.values())
            mine = [k for k in missing if k not in taken]
            if mine:  # this batch's last clip nobody took: the workers take from the front of the queue
                key = mine[-1]
                self._drop(key)
                if self._seconds.get(key, float("inf")) > LONG_CLIP_S and self._pool is not None:
                    self._stop(memo)  # a long clip's activations alone in memory (restarted after if worth it)
                memo[key] = self.embed_here(paths[key])
            else:
                wait([f for f, k in self._running.items() if k in missing], return_when=FIRST_COMPLETED)

    def _embed_on_threads(self, paths: dict[str, Path], memo: dict) -> None:
        """The batch's short clips not yet embedded, on as many threads of this process as torch has (each
        embedding on one torch thread, as in a worker: the same bits), one model for all. A clip that fails is left
        for the loop of :meth:`fill`, which embeds it again and raises for its item alone."""
        import torch

        from clonebench.evaluate.execution.exact_conv import torch_threads

        threads = torch.get_num_threads()
        short = [k for k in paths if k not in memo and self._seconds.get(k, float("inf")) <= LONG_CLIP_S]
        if threads < 2 or len(short) < 2:
            return
        with torch_threads(1), ThreadPoolExecutor(min(threads, len(short)), "clonebench-ecapa") as pool:
            futures = {pool.submit(self.embed_here, paths[key]): key for key in short}
            for future in as_completed(futures):
                if future.exception() is None:
                    memo[futures[future]] = future.result()
                    self._drop(futures[future])
        trim_heap()

    def _drop(self, key: str) -> None:
        if key in self._queued:
            self._queued.discard(key)
            self._queue = deque(c for c in self._queue if c[0] != key)

    def _collect(self, memo: dict) -> None:
        """Done workers' embeddings into ``memo``; the queue's front topped up to the workers."""
        if self._pool is None:
            return
        try:
            for future in [f for f in self._running if f.done()]:
                key = self._running.pop(future)
                try:
                    memo[key] = self.from_array(future.result())
                except BrokenProcessPool:
                    raise
                except Exception:  # noqa: BLE001 - embedded again here when its item is scored, which raises
                    pass           # for that item alone (evaluate/execution/chunk.py isolates it)
            while self._queue and len(self._running) < IN_FLIGHT_PER_WORKER * self._pool.workers:
                key, path = self._queue.popleft()
                self._queued.discard(key)
                if key not in memo:
                    self._running[self._pool.submit("ecapa", "", self.options, "embed_array", str(path))] = key
        except BrokenProcessPool as exc:
            raise ClonebenchError(f"an ECAPA worker process died ({exc}); out of memory? Lower "
                                  "evaluation.ecapa.workers, or set it to 1 to embed in this process") from None

    def _stop(self, memo: dict) -> None:
        """Let the workers finish their clips (collected), then stop them; the queue stays."""
        if self._running:
            wait(list(self._running))
        for future in list(self._running):
            key = self._running.pop(future)
            self._queued.discard(key)
            try:
                memo[key] = self.from_array(future.result())
            except Exception:  # noqa: BLE001 - embedded here when its item is scored (raises for that item)
                pass
        self._pool.close()
        self._pool = None

    def close(self) -> None:
        for future in self._running:
            future.cancel()
        self._running = {}
        self._queue.clear()
        self._queued.clear()
        self._seconds.clear()
        if self._pool is not None:
            self._pool.close()
            self._pool = None


def _seconds(path: Path) -> float:
    """The clip's duration from its header; infinite (this process embeds it) when that cannot tell."""
    from clonebench.core.untrusted import UntrustedFileError
    from clonebench.evaluate.protocols.audio import header_seconds

    try:
        seconds = header_seconds(path)
    except (UntrustedFileError, OSError):
        return float("inf")
    return float("inf") if seconds is None else seconds


@functools.lru_cache(maxsize=1)
def _libc():
    import ctypes

    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def trim_heap() -> None:
    """Give the memory the embedding threads freed back to the system: glibc keeps a freed block in the arena of
    the thread that used it, so a long clip embedded next by the main thread would add its activations on top of
    theirs in the peak RSS. ``malloc_trim`` (glibc only; no kept Python library exposes it; elsewhere a no-op)."""
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)
