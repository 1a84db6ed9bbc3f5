#!/usr/bin/env python
"""ECAPA's SIM over distinct clips three ways, each a whole fresh process (``scoring.run_group``, model loaded
once): torch's own path on two threads (what the evaluate phase did before the exact path, and the peer's per-clip
cost), the one-thread exact path in one process (``evaluation.ecapa.workers=1``), and the exact path on one
process per core (``workers`` = cores). Prints wall and process-tree CPU seconds (``wait4``: the workers included)
per mode, alternating over ``--runs``, the ratios against the two-thread path, and whether every SIM value is the
same in all three (it must be: the exit status is 1 otherwise). Not in CI.

    python bench/ecapa_workers.py [--clips 40] [--seconds 6] [--runs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
from pathlib import Path
from types import SimpleNamespace
mode, folder, cache = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
import torch
from clonebench.core.hashing import HashCache
from clonebench.evaluate.execution import exact_conv
from clonebench.evaluate.execution.cache import MetricCache
from clonebench.evaluate.execution.threads import available_cores
from clonebench.evaluate.scoring import run_group
from tests.conftest import score_item
if mode == "two_threads":
    exact_conv.VERIFIED_TORCH = ("0",)  # torch's own path, as on an unverified torch
    torch.set_num_threads(2)
clips = sorted(folder.glob("*.wav"))
items = [score_item(c, clips[(k + 1) % len(clips)], sample_id=f"s{k}") for k, c in enumerate(clips)]
workers = available_cores() if mode == "workers" else 1
options = {"ecapa": {"threshold": 0.25, "local_dir": None, "allow_hub": False, "workers": workers},
           "whisper": {"backend": "faster_whisper"}}
settings = SimpleNamespace(evaluation=SimpleNamespace(scorer_options=options, batch_size=8))
provenance, records = run_group("ecapa", settings, "cpu", items, MetricCache(cache, None), HashCache(None))
print("RESULT " + json.dumps({"values": {k: r.values for k, r in sorted(records.items())},
                              "cpu_threads": provenance["execution"].get("cpu_threads")}))
"""


def make_clips(folder: Path, n: int, seconds: float) -> None:
    import numpy as np
    import soundfile as sf

    speech = np.concatenate([sf.read(str(p), dtype="float64")[0]
                             for p in sorted(Path("/usr/share/pocketsphinx/test/data/librivox").glob("*.wav"))])
    if speech.size == 0:
        raise SystemExit("no pocketsphinx-testdata clip: run `bash scripts/setup.sh`")
    for k in range(n):
        length = int(16000 * seconds * (0.5 + (k % 5) / 4))  # 0.5x .. 1.5x the mean length
        x = np.roll(np.tile(speech, length // speech.size + 1), -3001 * k)[:length]
        sf.write(str(folder / f"clip{k:03d}.wav"), 0.8 * x, 16000, subtype="PCM_16")


def run(mode: str, folder: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]), "HF_HUB_OFFLINE": "1"}
    cache = Path(tempfile.mkdtemp(prefix=f"cache-{mode}-", dir=folder))  # a fresh metric cache: nothing reused
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, mode, str(folder), str(cache)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env, cwd=folder)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"{mode} run failed (status {status})")
    result = json.loads(next(line[7:] for line in out.splitlines() if line.startswith("RESULT ")))
    return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "cpu_threads": result["cpu_threads"], "values": result["values"], "load_1min": os.getloadavg()[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clips", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=6.0, help="mean clip length")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    modes = ("two_threads", "exact_one_process", "workers")
    with tempfile.TemporaryDirectory(prefix="ecapa-workers-") as tmp:
        folder = Path(tmp)
        make_clips(folder, args.clips, args.seconds)
        runs = {m: [] for m in modes}
        for _ in range(max(1, args.runs)):
            for mode in modes:
                runs[mode].append(run(mode, folder))
    same = len({json.dumps(r["values"], sort_keys=True) for rs in runs.values() for r in rs}) == 1
    total = {m: {k: sum(r[k] for r in rs) for k in ("wall_s", "cpu_s")} for m, rs in runs.items()}
    print(json.dumps({
        "clips": args.clips, "mean_seconds": args.seconds, "runs": args.runs, "cores": len(os.sched_getaffinity(0)),
        "per_run": {m: [{k: r[k] for k in ("wall_s", "cpu_s", "cpu_threads", "load_1min")} for r in rs]
                    for m, rs in runs.items()},
        "ratio_two_threads_over": {m: {k: round(total["two_threads"][k] / total[m][k], 2) for k in ("wall_s", "cpu_s")}
                                   for m in modes[1:]},
        "every_sim_identical": same}, indent=2))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
