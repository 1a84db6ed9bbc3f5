"""A warning, once, when thread settings leave cores idle during scoring."""

from __future__ import annotations

import logging

from clonebench.evaluate import threads


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
    with caplog.at_level(logging.WARNING, logger="clonebench.evaluate.threads"):
        assert threads.warn_if_slow(4) == ["OMP_NUM_THREADS=1"]
        assert threads.warn_if_slow(4) == ["OMP_NUM_THREADS=1"]
    warnings = [r for r in caplog.records if "fewer than the 4 cores" in r.getMessage()]
    assert len(warnings) == 1 and "OMP_NUM_THREADS=1" in warnings[0].getMessage()


def test_idle_openmp_threads_sleep_unless_a_policy_was_chosen():
    from clonebench.evaluate.threads import quiet_idle_threads

    fresh: dict[str, str] = {}
    quiet_idle_threads(fresh)
    assert fresh == {"OMP_WAIT_POLICY": "PASSIVE"}
    chosen = {"OMP_WAIT_POLICY": "ACTIVE"}
    quiet_idle_threads(chosen)
    assert chosen == {"OMP_WAIT_POLICY": "ACTIVE"}  # the user's choice stands


def test_the_cli_entry_point_sets_the_wait_policy():
    import subprocess
    import sys

    from tests.conftest import REPO

    code = ("import os, sys; from clonebench.cli.main import main\n"
            "try:\n    main(['doctor', '--help'])\nexcept SystemExit:\n    pass\n"
            "print(os.environ.get('OMP_WAIT_POLICY'))")
    env = {k: v for k, v in __import__("os").environ.items() if k != "OMP_WAIT_POLICY"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env={**env, "PYTHONPATH": str(REPO / "src")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "PASSIVE"
