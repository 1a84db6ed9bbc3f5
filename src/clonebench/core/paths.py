"""Where the checkout's own folders are, named once (no ``Path(__file__).parents[N]`` elsewhere).

clonebench runs from its source tree (``pip install -e .``): the Hydra configs and the reproduction data files
sit beside ``src/``, not inside the package.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]   # src/clonebench
SRC_DIR = PACKAGE_DIR.parent                        # src (what a subprocess puts on PYTHONPATH)
REPO_DIR = SRC_DIR.parent                           # the checkout
CONFIGS_DIR = REPO_DIR / "configs"
REPRODUCTION_DIR = REPO_DIR / "reproduction"
