"""Sample selection lives in data/: evaluate and merge depend on data and the journal reader, not on generate."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO


def test_evaluate_and_merge_do_not_import_the_generate_phase():
    code = ("import sys, clonebench.data.selection, clonebench.evaluate.phase, clonebench.evaluate.inputs, "
            "clonebench.runs.merge\n"
            "bad = sorted(m for m in sys.modules if m in ('clonebench.generate.phase', 'clonebench.generate.runner', 'clonebench.generate.recorder'))\n"
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert result.returncode == 0, result.stdout + result.stderr


def test_selection_functions_live_in_data():
    from clonebench.data import selection

    assert {"load_samples", "load_all_samples", "shard_of"} <= set(dir(selection))
    import clonebench.generate.phase as phase
    assert not hasattr(phase, "load_all_samples")


def test_suite_definitions_are_data():
    """Suites are data: loading one and its inputs imports no pipeline phase (and no rvcbench code)."""
    code = ("import sys, clonebench.suite.definition, clonebench.suite.rows, clonebench.suite.inputs\n"
            "bad = sorted(m for m in sys.modules if m.startswith(('clonebench.generate', 'clonebench.evaluate', "
            "'clonebench.report', 'clonebench.adversary', 'rvcbench')))\n"
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert result.returncode == 0, result.stdout + result.stderr
