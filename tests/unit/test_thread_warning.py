"""A warning, once, when thread settings leave cores idle during scoring."""

from __future__ import annotations

import logging

from clonebench.evaluate.execution import threads


def test_single_thread_settings_are_named():
    assert threads.slow_settings(2, {"OMP_NUM_THREADS": "1"}, 2) == ["OMP_NUM_THREADS=1"]
    assert threads.slow_settings(8, {"MKL_NUM_THREADS": "4"}, 8) == ["MKL_NUM_THREADS=4"]
    assert "torch uses 1 thread(s)" in threads.slow_settings(2, {}, 1)[0]


def test_settings_that_use_every_core_are_not_flagged():
    assert threads.slow_settings(2, {"OMP_NUM_THREADS": "2"}, 2) == []
    assert threads.slow_settings(2, {"OMP_NUM_THREADS": "auto"}, None) == []
    assert threads.slow_settings(1, {"OMP_NUM_THREADS": "1"}, 1) == []  # one core: nothing to lose


def test_warns_once_per_process(monkeypatch, caplog):
    monkeypatch.setattr(threads, "_warned", False)
    monkeypatch.setattr(threads, "available_cores", lambda: 4)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    with caplog.at_level(logging.WARNING, logger="clonebench.evaluate.execution.threads"):
        assert threads.warn_if_slow(4) == ["OMP_NUM_THREADS=1"]
        assert threads.warn_if_slow(4) == ["OMP_NUM_THREADS=1"]
    warnings = [r for r in caplog.records if "fewer than the 4 cores" in r.getMessage()]
    assert len(warnings) == 1 and "OMP_NUM_THREADS=1" in warnings[0].getMessage()
