"""Single-threaded scorer groups run on a background thread beside the others; order and errors are kept."""

from __future__ import annotations

import threading
import time

import pytest

from clonebench.core.hashing import HashCache
from clonebench.evaluate.execution.overlap import run_groups, split

BESIDE = {"mcd", "dnsmos"}.__contains__
HANG_S = 30  # how long a test thread waits for another before giving up: a guard against a hang, not a speed


def test_split_keeps_everything_in_front_without_a_foreground():
    assert split(["ecapa", "whisper", "mcd", "dnsmos"], BESIDE) == (["ecapa", "whisper"], ["mcd", "dnsmos"])
    assert split(["mcd", "dnsmos"], BESIDE) == (["mcd", "dnsmos"], [])


def test_background_groups_overlap_and_results_come_in_group_order(tmp_path):
    seen = {}
    running = set()
    overlapped = threading.Event()
    lock = threading.Lock()

    def run_one(group, cache):
        with lock:
            running.add(group)
            if {"whisper", "dnsmos"} <= running or {"ecapa", "mcd"} <= running:
                overlapped.set()
        seen[group] = (threading.current_thread().name, cache)
        overlapped.wait(timeout=HANG_S)  # each group ends once a pair has run together (the timeout: a hang guard)
        with lock:
            running.discard(group)
        return f"result {group}"

    main_cache = HashCache(tmp_path / "h.sqlite")
    out = run_groups(["mcd", "ecapa", "whisper", "dnsmos"], BESIDE, run_one, main_cache, tmp_path / "h.sqlite")
    assert out == [(g, f"result {g}") for g in ("mcd", "ecapa", "whisper", "dnsmos")]
    assert overlapped.is_set()
    assert seen["ecapa"][0] == seen["whisper"][0] == threading.current_thread().name
    assert seen["mcd"][0].startswith("clonebench-score") and seen["dnsmos"][0].startswith("clonebench-score")
    # the background thread has its own SQLite connection (connections stay in their thread)
    assert seen["mcd"][1] is not main_cache and seen["ecapa"][1] is main_cache
    main_cache.close()


def test_a_background_error_is_raised_after_the_foreground_finishes():
    finished = []

    def run_one(group, cache):
        if group == "mcd":
            raise RuntimeError("mcd broke")
        time.sleep(0.1)
        finished.append(group)
        return group

    with pytest.raises(RuntimeError, match="mcd broke"):
        run_groups(["ecapa", "mcd", "whisper"], BESIDE, run_one, HashCache(None), None)
    assert finished == ["ecapa", "whisper"]


def test_background_items_use_one_worker_while_the_foreground_runs(monkeypatch):
    from clonebench.evaluate.execution import overlap

    monkeypatch.setattr(overlap.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert overlap.spare_cores() == 3
    seen = []
    checked = threading.Event()

    def run_one(group, cache):
        if group == "ecapa":
            checked.wait(timeout=HANG_S)  # the foreground runs until the background has looked (a hang guard)
        if group == "dnsmos":
            seen.append(overlap.spare_cores())
            checked.set()
            deadline = time.monotonic() + HANG_S  # still running when the foreground ends: wait for it to end
            while overlap.spare_cores() == 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            seen.append(overlap.spare_cores())
        return group

    run_groups(["ecapa", "dnsmos"], BESIDE, run_one, HashCache(None), None)
    assert seen == [1, 3]
    assert overlap.map_items(lambda x: x * x, list(range(20))) == [x * x for x in range(20)]


def test_groups_that_do_not_share_cores_run_alone_first():
    from clonebench.evaluate.execution.overlap import shares_cores

    log = []
    lock = threading.Lock()
    mcd_started = threading.Event()

    def run_one(group, cache):
        with lock:
            log.append(("start", group))
        if group == "mcd":
            mcd_started.set()
        elif group == "whisper":
            mcd_started.wait(timeout=HANG_S)  # whisper ends once mcd has started beside it (a hang guard)
        else:  # ecapa: an mcd started beside it would show here; a pass never depends on how long this is
            mcd_started.wait(timeout=0.15)
        with lock:
            log.append(("end", group))
        return group

    shares = lambda g: shares_cores(g, "faster_whisper")  # noqa: E731
    out = run_groups(["whisper", "ecapa", "mcd"], BESIDE, run_one, HashCache(None), None, shares)
    assert out == [("whisper", "whisper"), ("ecapa", "ecapa"), ("mcd", "mcd")]
    # ecapa (torch) runs alone before anything else; mcd starts beside whisper (CTranslate2)
    assert log[:2] == [("start", "ecapa"), ("end", "ecapa")]
    assert log.index(("start", "mcd")) < log.index(("end", "whisper"))
    assert not shares_cores("whisper", "openai_whisper") and not shares_cores("ecapa", "faster_whisper")


def test_without_a_sharing_group_the_background_runs_after_on_all_cores(monkeypatch):
    from clonebench.evaluate.execution import overlap

    monkeypatch.setattr(overlap.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    log = []

    def run_one(group, cache):
        log.append((group, overlap.spare_cores()))
        return group

    run_groups(["ecapa", "dnsmos"], BESIDE, run_one, HashCache(None), None, lambda g: False)
    assert log == [("ecapa", 2), ("dnsmos", 2)]
