#!/usr/bin/env python
"""Suite scale: validating, resuming a finished suite (0 requests) and reporting full-v1, at 1,272 vs 12,724 pairs.

A synthetic full-v1 in the real layout (``clonebench.demo.suite_dataset``, ``speech="tiny"``: a 0.25 s tone per
file, the selections rewritten with their hashes; the small suite keeps every 10th pair of each task). Per size,
each step in its own process (wall time and peak RSS):

1. validate: load the suite and verify every input file (read and sha256, no cache), as a suite run does first;
2. generate the whole suite against the stand-in answering tones (not a goal: server-bound), then
3. resume it: ``vc.resume_from=<suite dir>``, which must send 0 requests;
4. report: scores written into each task run as an evaluated run would (synthetic values: the report does not
   care how they were made), then ``clonebench suite SUITE_DIR`` (suite results, tables, submission.json).

Printed: the ratios large/small of each step's time (goal <= 11x for 10x the pairs) and peak RSS (goal <= 1.5x).

    python bench/suite_scale.py [--every 10] [--concurrency 8] [--tasks longtext ...]
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _standins import ENV, REPO, requests_received, start_standin  # noqa: E402

sys.path.insert(0, str(REPO / "src"))

# VmHWM of /proc/self/status: the process's own peak. (getrusage's ru_maxrss survives exec, so a child of this
# script would report this script's own, larger, peak.)
RSS = ("import atexit, sys; atexit.register(lambda: print('MAXRSS', next(int(l.split()[1]) for l in "
       "open('/proc/self/status') if l.startswith('VmHWM')), file=sys.stderr)); ")


def measured(code: str) -> dict:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", RSS + code], cwd=REPO, capture_output=True, text=True, env=ENV)
    wall = time.perf_counter() - started
    if result.returncode not in (0, 1):
        raise SystemExit(f"step failed ({result.returncode}):\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}")
    rss = [int(line.split()[1]) for line in result.stderr.splitlines() if line.startswith("MAXRSS")]
    return {"wall_s": round(wall, 3), "peak_rss_mib": round(rss[-1] / 1024, 1), "stdout": result.stdout}


def run_vc(*overrides: str) -> dict:
    argv = ["run_vc.py", "--config-name", "suite/full_v1", *overrides]
    out = measured(f"import runpy; sys.argv = {argv!r}; runpy.run_path('run_vc.py', run_name='__main__')")
    out["suite_dir"] = next(line.split(": ", 1)[1].split(" (")[0] for line in out["stdout"].splitlines()
                            if line.startswith("suite "))
    return out


def fake_scores(suite_dir: Path) -> None:
    """Per task run: generation_sample_metrics.csv, metrics.json and scoring_manifest.json with synthetic values."""
    import numpy as np

    from clonebench.evaluate.outputs import COLUMNS

    rng = np.random.default_rng(0)
    for task_dir in sorted((suite_dir / "tasks").iterdir()):
        samples = json.loads((task_dir / "run_manifest.json").read_text())["samples"]
        metrics = ("sim", "mos", "wer", "mcd", "sva", "emotion_match")
        with open(task_dir / "generation_sample_metrics.csv", "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
            writer.writeheader()
            for s in samples:
                writer.writerow({"sample_id": s["sample_id"], "pair_id": s["pair_id"], "speaker_id": s["speaker_id"],
                                 "sim": rng.uniform(0.3, 0.8), "mos": rng.uniform(2, 4.5), "wer": rng.uniform(0, 0.4),
                                 "mcd": rng.uniform(4, 9), "sva": 1.0, "emotion_match": 1.0})
        (task_dir / "metrics.json").write_text(json.dumps({"status": "complete", "metrics": {
            m: {"ci": [0.0, 1.0]} for m in metrics}, "scorer_fingerprints": {"ecapa": "0" * 64}}))
        (task_dir / "scoring_manifest.json").write_text(json.dumps({"source_run": {"run_dir": str(task_dir)}}))


def one_size(work: Path, every: int, url: str, concurrency: int, tasks: list[str] | None) -> dict:
    from clonebench.demo.suite_dataset import build_suite_standin

    started = time.perf_counter()
    folder = build_suite_standin("full-v1", work / "standin", tasks, speech="tiny", every=every)
    built = time.perf_counter() - started
    root = work / "standin" / "dataset"
    validate = measured(
        "from clonebench.suite.definition import load_suite; from clonebench.suite.inputs import check_suite_inputs; "
        f"counts = check_suite_inputs(load_suite({str(folder)!r}, {tasks!r}), {str(root)!r}, 42); "
        "print('PAIRS', sum(counts.values()))")
    pairs = int(next(line.split()[1] for line in validate["stdout"].splitlines() if line.startswith("PAIRS")))
    common = [f"suite.name={folder}", f"dataset.root_path={root}", f"paths.results_dir={work / 'results'}",
              f"adversary.endpoint_url={url}/v1/tts", f"adversary.concurrency={concurrency}",
              "adversary.reference_check=false", "+vc.generate_only=true"]
    if tasks:
        common.append(f"suite.tasks=[{','.join(tasks)}]")
    before = requests_received(url)
    generate = run_vc(*common)
    sent_generate = requests_received(url) - before
    resume = run_vc(*common, f"vc.resume_from={generate['suite_dir']}")
    sent_resume = requests_received(url) - before - sent_generate
    fake_scores(Path(generate["suite_dir"]))
    report = measured(f"from clonebench.cli.main import main; sys.exit(main(['suite', {generate['suite_dir']!r}]))")
    return {"pairs": pairs, "build_s": round(built, 1), "requests_generate": sent_generate,
            "requests_resume": sent_resume,
            **{step: {k: v for k, v in m.items() if k in ("wall_s", "peak_rss_mib")}
               for step, m in (("validate", validate), ("generate", generate), ("resume", resume), ("report", report))}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=10, help="the small suite keeps every N-th pair")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--tasks", nargs="*", help="only these tasks (a quick check of the script; default: all)")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        server, url = start_standin(work, "s", "--tone", "--parallel")
        try:
            for every in (args.every, 1):
                results[every] = one_size(work / f"every{every}", every, url, args.concurrency, args.tasks)
        finally:
            server.kill()
    small, large = results[args.every], results[1]
    print(json.dumps({str(r["pairs"]): r for r in results.values()}, indent=2))
    print(f"pairs {large['pairs']} vs {small['pairs']} ({large['pairs'] / small['pairs']:.2f}x); resume sent "
          f"{large['requests_resume']} and {small['requests_resume']} requests (goal 0)")
    for step in ("validate", "resume", "report", "generate"):
        time_ratio = large[step]["wall_s"] / small[step]["wall_s"]
        rss_ratio = large[step]["peak_rss_mib"] / small[step]["peak_rss_mib"]
        goal = "" if step == "generate" else " (goals: <= 11x time, <= 1.5x memory)"
        print(f"{step:<9} time {small[step]['wall_s']:8.2f} s -> {large[step]['wall_s']:8.2f} s: {time_ratio:5.2f}x   "
              f"peak RSS {small[step]['peak_rss_mib']:7.1f} -> {large[step]['peak_rss_mib']:7.1f} MiB: "
              f"{rss_ratio:4.2f}x{goal}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
