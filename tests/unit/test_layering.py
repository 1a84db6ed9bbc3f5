"""The import graph as a contract: the rooms' layering, no cycle, few loose modules.

The contracts themselves live in pyproject.toml (``[tool.importlinter]``) and are checked by import-linter's
``lint-imports``, which counts lazy (function-level) and TYPE_CHECKING imports. What import-linter cannot say
(no cycle between any two modules anywhere, how many modules sit at the package root, that loading a suite
imports no rvcbench code at run time) is checked here on the same graph (grimp, import-linter's own).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import grimp

from tests.conftest import REPO

ROOT_MODULES_MAX = 4


def test_lint_imports_keeps_every_contract():
    exe = shutil.which("lint-imports") or str(os.path.join(os.path.dirname(sys.executable), "lint-imports"))
    result = subprocess.run([exe, "--no-cache", "--config", str(REPO / "pyproject.toml")], capture_output=True,
                            text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def _strongly_connected(graph, modules: set[str]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan; recursion depth is bounded by the module count (~200)
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in modules:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(modules):
        if module not in index:
            visit(module)
    return found


def test_no_import_cycle_between_any_two_modules():
    sys.path.insert(0, str(REPO / "src"))
    graph = grimp.build_graph("clonebench", cache_dir=None)
    cycles = _strongly_connected(graph, set(graph.modules))
    assert cycles == [], f"import cycles: {cycles}"


def test_at_most_four_modules_at_the_package_root():
    root = REPO / "src" / "clonebench"
    loose = sorted(p.name for p in root.glob("*.py") if p.name != "__init__.py")
    assert len(loose) <= ROOT_MODULES_MAX, loose


def test_suite_definitions_load_without_rvcbench_code():
    """Suites are data: rvcbench's suite files are read as package data, its code is never imported."""
    code = ("import sys, clonebench.suite.definition, clonebench.suite.rows, clonebench.suite.inputs\n"
            "bad = sorted(m for m in sys.modules if m.startswith(('rvcbench', 'clonebench.generate', "
            "'clonebench.evaluate', 'clonebench.report', 'clonebench.adversary')))\n"
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert result.returncode == 0, result.stdout + result.stderr


def test_selection_functions_live_in_data():
    from clonebench.data import selection

    assert {"load_samples", "load_all_samples", "shard_members"} <= set(dir(selection))
    import clonebench.generate.phase as phase
    assert not hasattr(phase, "load_all_samples")
