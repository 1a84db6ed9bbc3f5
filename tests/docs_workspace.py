"""A scratch repository root in which README and docs commands run exactly as printed: from its root, with the
relative paths they print, through a shell (quotes as printed), ``python`` this interpreter and ``clonebench`` this
checkout's CLI. Only the glossary's placeholders are substituted (docs/glossary.md#placeholders): a path holding
``<stamp>-<id>`` names the newest folder that matches it.

The root holds copies of ``scripts/`` and ``docs/`` (a script's REPO is its own parent, and a command may write into
``docs/``) and links to the rest of the checkout; it has no ``pyproject.toml``, so nothing can be pip-installed from
it. Whatever a command writes stays under it."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

LINKED = ("src", "configs", "reproduction", "run_vc.py", "bench", "tests")
COPIED = ("scripts", "docs")
PATH_WITH_PLACEHOLDER = re.compile(r"\S*<stamp>-<id>\S*")


class Workspace:
    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True)
        for name in LINKED:
            (root / name).symlink_to(REPO / name)
        for name in COPIED:
            shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        bin_dir = root.parent / f"{root.name}-bin"
        bin_dir.mkdir()
        (bin_dir / "python").symlink_to(sys.executable)
        (bin_dir / "clonebench").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m clonebench.cli.main "$@"\n')
        (bin_dir / "clonebench").chmod(0o755)
        self.env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(REPO / "src"),
                    "HF_HUB_OFFLINE": "1"}

    def substituted(self, command: str) -> str:
        """``command`` with each path that holds ``<stamp>-<id>`` replaced by the newest existing match."""
        def newest(match: re.Match) -> str:
            pattern = match.group(0).replace("<stamp>-<id>", "[0-9]*-[0-9]*-*")
            found = sorted(glob.glob(pattern, root_dir=self.root), key=lambda p: os.path.getmtime(self.root / p))
            assert found, f"{match.group(0)}: no folder matches in the workspace (an earlier command should make it)"
            return found[-1]
        return PATH_WITH_PLACEHOLDER.sub(newest, command)

    def run(self, command: str, timeout: int = 900) -> subprocess.CompletedProcess:
        assert not re.search(r"<[a-z][a-z0-9_ -]*>", self.substituted(command)), command
        return subprocess.run(["bash", "-c", self.substituted(command)], cwd=self.root, env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def run_printed(self, prefixes: tuple[str, ...], timeout: int = 900) -> list[str]:
        """Run, in order, the one README/docs command that starts with each prefix; their standard outputs."""
        from tests.e2e.test_readme_commands import readme_command

        outputs = []
        for prefix in prefixes:
            done = self.run(readme_command(prefix), timeout)
            assert done.returncode == 0, (prefix, done.stdout[-2000:], done.stderr[-3000:])
            outputs.append(done.stdout)
        return outputs
