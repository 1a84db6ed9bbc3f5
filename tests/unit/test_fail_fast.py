"""A scorer group whose every item fails with one and the same error stops the run with that error (once), instead
of N per-sample errors and a ``partial`` run; item-specific failures stay per-sample errors. When the foreground
fails, the background stops at its next batch and the foreground's error is the one raised."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from clonebench.core.hashing import HashCache
from clonebench.evaluate import scoring as phase
from clonebench.evaluate.execution import overlap
from clonebench.evaluate.execution.cache import MetricCache
from tests.conftest import score_item

CUDA_ERROR = "RuntimeError: CUDA error: no kernel image is available for execution on the device"


def test_fail_fast_rule():
    phase.fail_fast("ecapa", "cuda:0", 1, {"a": CUDA_ERROR})  # one item cannot tell its cause from the scorer's
    phase.fail_fast("ecapa", "cuda:0", 3, {"a": CUDA_ERROR, "b": CUDA_ERROR})  # one item scored
    phase.fail_fast("ecapa", "cuda:0", 2, {"a": CUDA_ERROR, "b": "ValueError: bad WAV x.wav"})  # item-specific
    with pytest.raises(phase.ScorerGroupFailed, match=r"^scorer ecapa on cuda:0: all 2 items failed with the same "
                                                      r"error, so the cause is not in the audio: RuntimeError: CUDA "
                                                      r"error: no kernel image .*clonebench doctor --eval"):
        phase.fail_fast("ecapa", "cuda:0", 2, {"a": CUDA_ERROR, "b": CUDA_ERROR})


def _settings(batch_size=2):
    return SimpleNamespace(evaluation=SimpleNamespace(scorer_options={"mcd": {}, "whisper": {"backend": "faster_whisper"}},
                                                      batch_size=batch_size))


def _items(human_speech, count):
    clips = list(human_speech["librivox"])
    return [score_item(clips[k % len(clips)], clips[(k + 1) % len(clips)], sample_id=f"s{k}") for k in range(count)]


def test_a_group_failing_the_same_way_everywhere_stops_with_one_error(monkeypatch, human_speech, tmp_path):
    from clonebench.evaluate.scorers.mcd import MCDScorer

    calls = []

    def broken(self, items):
        calls.append(len(items))
        raise RuntimeError("CUDA error: no kernel image is available for execution on the device")

    monkeypatch.setattr(MCDScorer, "score_batch", broken)
    items = _items(human_speech, 5)
    with pytest.raises(phase.ScorerGroupFailed, match="all 5 items failed with the same error") as caught:
        phase.run_group("mcd", _settings(), "cpu", items, MetricCache(tmp_path, None), HashCache(None))
    assert str(caught.value).count("no kernel image") == 1
    assert not list(tmp_path.rglob("*.json"))  # nothing cached: a run after the fix scores them all


def test_item_specific_failures_stay_per_sample(monkeypatch, human_speech, tmp_path):
    from clonebench.evaluate.scorers.mcd import MCDScorer

    real = MCDScorer.score_batch

    def picky(self, items):
        if any(i.sample_id in ("s1", "s3") for i in items):
            raise ValueError(f"cannot read {items[0].sample_id}")
        return real(self, items)

    monkeypatch.setattr(MCDScorer, "score_batch", picky)
    _, records = phase.run_group("mcd", _settings(), "cpu", _items(human_speech, 4), MetricCache(tmp_path, None),
                                 HashCache(None))
    assert {k: r.error for k, r in records.items() if not r.ok} == {"s1": "ValueError: cannot read s1",
                                                                  "s3": "ValueError: cannot read s3"}
    assert records["s0"].ok and records["s2"].ok


def test_the_background_stops_when_the_foreground_fails():
    started, inside, stopped = [], threading.Event(), threading.Event()
    hang_s = 30  # how long either thread waits for the other: a guard against a hang, not a speed

    def run_one(group, cache):
        if group == "ecapa":
            inside.wait(timeout=hang_s)  # fails once the background is inside its first group
            raise phase.ScorerGroupFailed("ecapa broke")
        started.append(group)
        inside.set()
        deadline = time.monotonic() + hang_s
        while time.monotonic() < deadline:  # a group scoring batch after batch
            time.sleep(0.02)
            try:
                overlap.check_stop()
            except overlap.Stopped:
                stopped.set()
                raise
        return group

    with pytest.raises(phase.ScorerGroupFailed, match="ecapa broke"):
        overlap.run_groups(["ecapa", "mcd", "dnsmos"], {"mcd", "dnsmos"}.__contains__, run_one, HashCache(None), None)
    assert started == ["mcd"] and stopped.is_set()  # dnsmos never started, mcd stopped at its next batch
    overlap.check_stop()  # cleared for the next run
