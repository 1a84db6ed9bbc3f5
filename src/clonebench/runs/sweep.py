"""A sweep's status read back from its folder (``results/<run>/multirun-<stamp>-<id>``): one entry per shard with
its state, cluster job id and node, pairs done and left, the log to read and the next command to run.

Each shard's state comes from its own run records (``runs/status.py``: the journal, the scoring progress), never
from the launcher: a shard that caught SIGTERM returns normally, so a scheduler and Hydra call it completed. A
shard resumed (by hand with ``vc.resume_from``, or by a SLURM requeue, ``runs/requeue.py``) is a chain of folders
in the sweep; the newest attempt (the one no other attempt resumed from) decides the shard's state, and the next
command is merge's own (``runs/merge_shards.py``: resume into ``<shard>-resumed``, or run a missing shard). A shard that
left no folder (cancelled before it started, its node lost) is "not started" when the sweep's shard count says it
should exist. The array task id of a shard's job is its Hydra job number (``.submitit/<array>_<task>/`` holds its
scheduler log), which is the shard index for ``'vc.shard.index=range(0,N)'``.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from clonebench.core.errors import ClonebenchError
from clonebench.generate.journal import MANIFEST_NAME, read_record
from clonebench.generate.resume import ORIGIN_KEY
from clonebench.runs.merge_shards import Shard, missing_shard_command, resume_command
from clonebench.runs.status import suite_status, summarise
from clonebench.suite.record import is_suite_dir

MERGED = "merged"
SUBMITIT = ".submitit"
DONE_STATES = ("generated", "complete")


def is_sweep_dir(path: Path) -> bool:
    """A multirun folder: Hydra's ``multirun.yaml``, or job folders but no run record of its own."""
    path = Path(path)
    return (path / "multirun.yaml").is_file() and not (path / MANIFEST_NAME).is_file()


def _attempt_dirs(sweep: Path) -> list[Path]:
    found = [p for p in sweep.iterdir() if p.is_dir() and not p.is_symlink() and p.name != MERGED
             and not p.name.startswith(".") and ((p / ".hydra").is_dir() or (p / MANIFEST_NAME).is_file()
                                                 or is_suite_dir(p))]
    return sorted(found, key=lambda p: (len(p.name), p.name))


def _manifest(folder: Path) -> dict:
    if not (folder / MANIFEST_NAME).is_file():
        return {}
    fix = "restore it (clonebench writes it) or re-run that shard"
    return read_record(folder / MANIFEST_NAME, ClonebenchError, fix)


def _state(summary: dict) -> tuple[str, int | None, int | None]:
    """(state, pairs done, pairs left) of one attempt; state is "generated" or "complete" when nothing is left."""
    scoring = summary.get("scoring")
    if "status" not in summary:  # an evaluate-only shard: scoring is all it has
        finished = scoring.get("state") == "finished" and scoring.get("status") == "complete"
        groups = [g for g in scoring.get("groups", {}).values() if isinstance(g, dict)]
        total = max((g.get("total") or 0 for g in groups), default=0)
        done = min(((g.get("cached") or 0) + (g.get("scored") or 0) for g in groups), default=0)
        state = "complete" if finished else f"scoring {scoring.get('state')} ({scoring['summary']})"
        return state, done, total - done
    status = str(summary["status"])
    done, left = summary["generated"], summary["requested"] - summary["generated"]
    if status == "generated" and scoring is not None and scoring.get("status") != "complete":
        status = f"generated, scoring unfinished ({scoring['summary']})"
    elif status == "generated" and scoring is not None:
        status = "complete"
    return status, done, left


def _scheduler_log(sweep: Path, cluster: dict, job_num: str | None) -> Path | None:
    array, task = cluster.get("array_job_id"), cluster.get("array_task_id")
    names = [f"{array}_{task}"] if array and task else [cluster["job_id"]] if cluster.get("job_id") else []
    if not names and job_num is not None:  # no folder of its own: the array task with this job number
        names = sorted(p.name for p in (sweep / SUBMITIT).glob(f"*_{job_num}") if p.is_dir())[-1:]
    for name in names:
        log = sweep / SUBMITIT / name / f"{name}_0_log.err"
        if log.is_file():
            return log
    return None


def _job(cluster: dict) -> str | None:
    """The id ``scancel``/``squeue`` take: ``<array job>_<task>`` for an array task, else the job id."""
    if cluster.get("array_job_id") and cluster.get("array_task_id"):
        return f"{cluster['array_job_id']}_{cluster['array_task_id']}"
    return cluster.get("job_id")


def _next(sweep: Path, attempt: dict, like: Shard | None) -> str | None:
    """The command that resumes an unfinished shard into the sweep, or runs again one that left no run record
    (merge's own commands, runs/merge_shards.py); None where no shard says how the sweep was run."""
    if attempt["manifest"]:
        return resume_command(sweep, Shard(attempt["folder"], attempt["manifest"]))
    index = attempt["shard"].get("index")
    return missing_shard_command(sweep, like, index) if like is not None and isinstance(index, int) else None


def sweep_status(sweep: Path, expected_count: int | None = None) -> dict:
    """Every shard of ``sweep``: state, job, node, pairs done/left, log, next command; ``ok`` when all finished."""
    sweep = Path(sweep)
    if not sweep.is_dir():
        raise ClonebenchError(f"{sweep}: no such sweep folder (results/<run>/multirun-<stamp>-<id>)")
    attempts = []
    for folder in _attempt_dirs(sweep):
        manifest = _manifest(folder)
        if is_suite_dir(folder):  # a suite config's job: its record's status ("complete" when every task is)
            suite = suite_status(folder)
            summary = {"status": "complete" if suite["status"] in DONE_STATES else str(suite["status"]),
                       "generated": sum(t.get("generated", 0) for t in suite["tasks"].values()),
                       "requested": sum(t.get("requested", 0) for t in suite["tasks"].values())}
        elif manifest or (folder / "scoring_progress.json").is_file():
            summary = summarise(folder)
        else:
            summary = {"status": "started, no run record (it stopped before writing one)", "generated": 0,
                       "requested": 0}
        shard = manifest.get("shard") if isinstance(manifest.get("shard"), dict) else \
            {"index": int(folder.name)} if folder.name.isdigit() else {}  # no record: its Hydra job number
        origin = manifest.get(ORIGIN_KEY) or (manifest.get("resumed_from") or {}).get("run_dir")
        attempts.append({"folder": folder, "summary": summary, "shard": shard, "manifest": manifest,
                         "cluster": manifest.get("cluster") if isinstance(manifest.get("cluster"), dict) else {},
                         "origin": os.path.realpath(origin) if isinstance(origin, str) else None,
                         "created_at": manifest.get("created_at") or 0})
    counts = {a["shard"].get("count") for a in attempts if isinstance(a["shard"].get("count"), int)}
    count = expected_count or (max(counts) if counts else None)
    groups: dict[str, list[dict]] = {}
    by_path = {os.path.realpath(a["folder"]): a for a in attempts}
    for attempt in sorted(attempts, key=lambda a: a["created_at"]):
        root, seen = attempt, set()
        while root["origin"] in by_path and root["origin"] not in seen:  # a resume chain inside the sweep
            seen.add(root["origin"])
            root = by_path[root["origin"]]
        key = str(root["shard"].get("index")) if (count or 1) > 1 and "index" in root["shard"] else root["folder"].name
        groups.setdefault(key, []).append(attempt)
    like = next((Shard(a["folder"], a["manifest"]) for a in attempts if a["manifest"]), None)  # for commands
    shards = []
    for key, chain in groups.items():
        origins = {a["origin"] for a in chain}
        newest = [a for a in chain if os.path.realpath(a["folder"]) not in origins][-1:] or chain[-1:]
        attempt = newest[0]
        state, done, left = _state(attempt["summary"])
        index = attempt["shard"].get("index")
        ok = state in DONE_STATES
        cluster = attempt["cluster"]
        log = _scheduler_log(sweep, cluster, None) or attempt["folder"] / "run_vc.log"
        shards.append({"shard": index if index is not None else key, "folder": str(attempt["folder"]),
                       "attempts": len(chain), "state": state, "ok": ok, "done": done, "left": left,
                       "job_id": _job(cluster), "node": cluster.get("node"), "log": str(log),
                       "next": None if ok else _next(sweep, attempt, like)})
    if count and count > 1:
        present = {s["shard"] for s in shards}
        for index in range(count):
            if index not in present:
                log = _scheduler_log(sweep, {}, str(index))
                shards.append({"shard": index, "folder": None, "attempts": 0, "ok": False, "done": 0, "left": None,
                               "state": "not started (no run folder: cancelled before it ran, or its job failed)",
                               "job_id": log.parent.name if log else None, "node": None,
                               "log": str(log) if log else None,
                               "next": missing_shard_command(sweep, like, index) if like else None})
    shards.sort(key=lambda s: (not isinstance(s["shard"], int), s["shard"] if isinstance(s["shard"], int) else 0,
                               str(s["shard"])))
    ok = bool(shards) and all(s["ok"] for s in shards)
    return {"sweep_dir": str(sweep), "shard_count": count, "ok": ok, "shards": shards,
            "next": shlex.join(["clonebench", "merge", str(sweep)]) if ok else None}


def sweep_lines(summary: dict) -> list[str]:
    """One line per shard (index, job id, state, pairs done/left, log) and the next command(s)."""
    lines = [f"sweep {summary['sweep_dir']}: " + ("every shard finished" if summary["ok"] else
                                                  f"{sum(not s['ok'] for s in summary['shards'])} of "
                                                  f"{len(summary['shards'])} shard(s) unfinished")]
    for s in summary["shards"]:
        left = "?" if s["left"] is None else s["left"]
        lines.append(f"  shard {s['shard']}: job {s['job_id'] or '-'} on {s['node'] or '-'}: {s['state']}; "
                     f"{s['done']} pair(s) done, {left} left; log {s['log'] or '-'}")
        if s["next"]:
            lines.append(f"    next: {s['next']}")
    if summary["next"]:
        lines.append(f"  next: {summary['next']}")
    return lines
