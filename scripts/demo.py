#!/usr/bin/env python
"""The offline demo (README command 1): eSpeak NG pairs -> stand-in Fish server on loopback -> run_vc.py.

1. builds a small LibriTTS-shaped dataset with eSpeak NG under results/demo/data/;
2. starts the stand-in Fish server (``python -m clonebench.standin``) on a free loopback port;
3. runs ``python run_vc.py --config-name demo`` against it, then stops the server.
``--results DIR`` (first) puts data and runs under DIR instead of results/; further arguments are
passed to run_vc.py as Hydra overrides.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from clonebench.demo.dataset import build_demo_dataset  # noqa: E402


def start_standin(port_file: Path) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-m", "clonebench.standin", "--listen", "127.0.0.1:0",
                                "--port-file", str(port_file), "--max-lifetime", "1800"],
                               env={**__import__("os").environ, "PYTHONPATH": str(REPO / "src")})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if port_file.exists() and port_file.read_text().strip():
            return process, port_file.read_text().strip()
        if process.poll() is not None:
            raise SystemExit(f"stand-in server exited with {process.returncode}")
        time.sleep(0.05)
    process.kill()
    raise SystemExit("stand-in server did not start within 60 s")


def main(argv: list[str]) -> int:
    results = REPO / "results"
    if argv[:1] == ["--results"]:
        results, argv = Path(argv[1]).resolve(), argv[2:]
    manifest = build_demo_dataset(results / "demo" / "data")
    print(f"demo dataset: {manifest}")
    with tempfile.TemporaryDirectory() as tmp:
        server, url = start_standin(Path(tmp) / "url")
        try:
            command = [sys.executable, str(REPO / "run_vc.py"), "--config-name", "demo", f"paths.results_dir={results}",
                       f"adversary.endpoint_url={url}/v1/tts", *argv]
            return subprocess.run(command, cwd=REPO).returncode
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
