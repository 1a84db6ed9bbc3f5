#!/usr/bin/env python
"""Compare a finished libritts16 run with the historical Fish S2 scores (same as ``clonebench compare``).

    python scripts/compare_reproduction_subset.py RUN_DIR [--historical FILE] [--output OUT.json]
    python scripts/compare_reproduction_subset.py --current A.json --historical B.json --output OUT.json
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from clonebench.cli.main import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(["compare", *sys.argv[1:]]))
