"""Run the stand-in in its own process (as a real server runs), for the demo, benchmarks and tests."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from clonebench.core.paths import SRC_DIR

SRC = SRC_DIR


def start_process(port_file: Path, *flags: str, max_lifetime: float = 3600.0,
                  timeout: float = 60.0) -> tuple[subprocess.Popen, str]:
    """Start ``python -m clonebench.standin`` on a free loopback port; returns the process and its URL.

    The server stops by itself after ``max_lifetime`` seconds; the caller stops it earlier.
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    process = subprocess.Popen([sys.executable, "-m", "clonebench.standin", "--listen", "127.0.0.1:0", "--port-file",
                                str(port_file), "--max-lifetime", str(max_lifetime), *flags],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_file.exists() and port_file.read_text().strip():
            return process, port_file.read_text().strip()
        if process.poll() is not None:
            raise RuntimeError(f"the stand-in server exited with {process.returncode}")
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"the stand-in server did not start within {timeout:.0f} s")
