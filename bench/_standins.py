"""Shared by the benchmarks: stand-in servers in their own processes, run_vc.py runs in subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1"}


def start_standin(work: Path, name: str, *flags: str) -> tuple[subprocess.Popen, str]:
    from clonebench.standin.process import start_process

    return start_process(work / f"{name}.url", *flags)


def requests_received(url: str, path: str = "/v1/tts") -> int:
    import httpx

    return sum(1 for r in httpx.get(f"{url}/_standin/received", timeout=60).json() if r["path"] == path)


def run_vc(work: Path, manifest: Path, *overrides: str, measure_rss: bool = False) -> dict:
    """One generate run in a subprocess; returns wall time, exit code, peak RSS (KiB) and the run directory."""
    argv = ["run_vc.py", "--config-name", "demo", f"paths.results_dir={work / 'results'}",
            f"dataset.manifest_filename={manifest}", f"dataset.root_path={manifest.parent}", "+vc.generate_only=true",
            *overrides]
    code = ("import atexit, resource, runpy, sys; "
            "atexit.register(lambda: print('MAXRSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)); "
            f"sys.argv = {argv!r}; runpy.run_path('run_vc.py', run_name='__main__')")
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env=ENV)
    wall = time.perf_counter() - started
    rss = [int(line.split()[1]) for line in result.stderr.splitlines() if line.startswith("MAXRSS")]
    runs = [line.split(": ", 1)[1] for line in result.stdout.splitlines() if line.startswith("run ")]
    if result.returncode != 0:
        raise SystemExit(f"run_vc failed ({result.returncode}):\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}")
    return {"wall_s": round(wall, 3), "max_rss_kib": rss[-1] if rss else None, "run_dir": runs[-1] if runs else None}
