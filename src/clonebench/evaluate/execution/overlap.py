"""Use both cores: scorer groups whose scorer computes on one CPU thread (MCD; DNSMOS, whose ONNX sessions
run one intra-op thread) are scored on a background thread while the other groups (ECAPA, Whisper, which
use every core through torch / CTranslate2) run in the foreground.

Each group's numbers do not depend on the schedule: a scorer is a pure function of its items, its thread
count is fixed (not chosen by what else runs), and the background thread has its own hash-cache
connection (SQLite connections stay in their thread). Results are returned in the requested group order,
and an error in either thread is raised after both have stopped.

Not every foreground scorer shares its cores well: torch's OpenMP threads (ECAPA, openai-whisper) stall
when a background thread takes a core (measured: ECAPA several times slower), CTranslate2 (faster-whisper)
does not. So foreground groups that do not share run first, alone; the background starts with the first
group that shares (``SHARES_CORES``), or after the foreground when none does.

Once the foreground groups are done, a background scorer may spread its independent items (or a clip's
independent windows) over every core (``map_items``): one worker while the foreground runs, all cores after.
Items are computed independently, so the worker count changes the time, not the numbers.

On a GPU host the foreground groups compute on the GPU and need only a few cores for their host side (audio
decoding, features, kernel launches: ``GPU_FEEDER_CORES``); the background (threads here, or the worker
processes of evaluate/execution/cpu_pool.py) gets the others while they run (``gpu_foreground(True)``). Inside a pool's
worker process ``map_items`` is sequential: the pool is the parallelism.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from clonebench.core.hashing import HashCache

_foreground_running = threading.Event()
_stop = threading.Event()  # a foreground group failed: the background stops at its next batch
_state = {"gpu_foreground": False, "in_worker": False}
GPU_FEEDER_CORES = 2  # cores left to the GPU groups' host side while CPU scorers run beside them
# (group, WER backend) pairs measured to keep their speed beside a background thread
SHARES_CORES = {("whisper", "faster_whisper")}


def shares_cores(group: str, wer_backend: str) -> bool:
    return (group, wer_backend if group == "whisper" else None) in SHARES_CORES


def gpu_foreground(on: bool) -> None:
    """Whether the foreground groups of the run compute on a GPU (set by the evaluate phase)."""
    _state["gpu_foreground"] = bool(on)


class Stopped(Exception):
    """The background gave up because a foreground group failed (that group's error is the one raised)."""


def check_stop() -> None:
    if _stop.is_set():
        raise Stopped()


def in_worker() -> None:
    """Mark this process as a CPU-pool worker: ``map_items`` runs sequentially."""
    _state["in_worker"] = True


def is_worker() -> bool:
    """Whether this process is a CPU-pool worker (a scorer loaded there starts no pool of its own)."""
    return _state["in_worker"]


def spare_cores() -> int:
    """Workers a background scorer may use now: one while CPU foreground groups run, all but
    ``GPU_FEEDER_CORES`` while GPU groups run, every core after (one inside a pool worker)."""
    if _state["in_worker"]:
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    if _foreground_running.is_set():
        return max(1, cores - GPU_FEEDER_CORES) if _state["gpu_foreground"] else 1
    return max(1, cores)


def map_items(fn: Callable[[Any], Any], items: list) -> list:
    """``[fn(i) for i in items]``, on ``spare_cores()`` threads (order kept; ``fn`` must release the GIL to gain)."""
    workers = min(spare_cores(), len(items))
    if workers <= 1:
        return [fn(i) for i in items]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="clonebench-item") as pool:
        return list(pool.map(fn, items))


def split(groups: list[str], runs_beside_others: Callable[[str], bool]) -> tuple[list[str], list[str]]:
    """(foreground, background) groups; nothing goes to the background when there is no foreground."""
    background = [g for g in groups if runs_beside_others(g)]
    foreground = [g for g in groups if g not in background]
    if not foreground:
        return groups, []
    return foreground, background


def run_groups(groups: list[str], runs_beside_others: Callable[[str], bool],
               run_one: Callable[[str, HashCache], Any], hash_cache: HashCache,
               hash_cache_path: Path | None, shares: Callable[[str], bool] = lambda g: True) -> list[tuple[str, Any]]:
    """``run_one(group, hash_cache)`` for every group, overlapping the background groups with the foreground
    groups that share their cores (``shares``); those that do not run first, alone."""
    foreground, background = split(groups, runs_beside_others)
    foreground = [g for g in foreground if not shares(g)] + [g for g in foreground if shares(g)]

    def in_background() -> dict[str, Any]:
        own = HashCache(hash_cache_path)
        try:
            out = {}
            for g in background:
                check_stop()
                out[g] = run_one(g, own)
            return out
        finally:
            own.close()

    done: dict[str, Any] = {}
    pending = None
    error: BaseException | None = None
    _stop.clear()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="clonebench-score") as pool:
        try:
            for group in foreground:
                if background and pending is None and shares(group):
                    _foreground_running.set()
                    pending = pool.submit(in_background)
                done[group] = run_one(group, hash_cache)
        except BaseException as exc:  # noqa: BLE001 - re-raised below, once the background has stopped
            error = exc
            _stop.set()
        finally:
            _foreground_running.clear()
        if error is None and background and pending is None:  # nothing shared its cores: after it, on all cores
            pending = pool.submit(in_background)
        try:
            if pending is not None:
                done.update(pending.result())  # waits; re-raises the background's error
        except BaseException:
            if error is None:
                raise
        finally:
            _stop.clear()
    if error is not None:
        raise error
    return [(g, done[g]) for g in groups]
