"""Folders of WAVs made outside clonebench -> checked -> recorded as generation runs -> one evaluate phase.

``clonebench score`` and ``run_vc.py +vc.evaluate_only=true +vc.evaluation.generated_audio_dir=FOLDER`` both come
here. Layout of ``clonebench score --output OUT`` (rvcbench's: one folder per model when several are scored):

    OUT/[<model>/]score_request.json    what was asked (pairs, folder, scorer config): --resume must match it
    OUT/[<model>/]submission_check.json every id's file or problem, and the extra files, per task
    OUT/[<model>/]<task>/               the run: generated_audio/, journal, run_manifest.json, metric_cache/,
                                        generation_sample_metrics.csv, metrics.json, scoring_manifest.json
    OUT/[<model>/]score.json            status and means per task

Every problem is found and printed for every folder before anything is written or scored. ``--resume`` reuses an
output folder whose request is unchanged: every file is checked and copied again, and the run's metric cache
makes unchanged audio a cache hit, so only new or changed files are scored. Each model folder is locked while
it is written. ``score.json`` is this harness's summary. An rvcbench suite is scored by ``external.score_suite`` (its
output folder is a suite run, with rvcbench's ``submission.json``), using the same checks and request rules.
"""

from __future__ import annotations

import json
import logging
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from clonebench.core.atomic import atomic_write_json
from clonebench.core.dict_diff import leaf_differences
from clonebench.core.errors import ClonebenchError
from clonebench.data.identity import digest
from clonebench.data.manifest import Selection
from clonebench.evaluate.phase import EvaluationJob, run_evaluation, run_evaluations
from clonebench.external.pair_sets import ID_SEPARATOR, PairSet, from_samples, is_safe_name, manifest_origin
from clonebench.external.record import record_external
from clonebench.external.submitted import DEFAULT_MAX_CLIP_SECONDS, FolderCheck, check_folder
from clonebench.generate.run_lock import RunLocks

log = logging.getLogger(__name__)
REQUEST = "score_request.json"
CHECK = "submission_check.json"
SUMMARY = "score.json"


@dataclass
class System:
    """One model's folder to score into ``out_dir``, and its checks (one per pair set)."""

    model: str
    folder: Path
    out_dir: Path
    checks: list[FolderCheck]


def check_folders(pair_sets: list[PairSet], folder: Path,
                  max_clip_seconds: float | None = DEFAULT_MAX_CLIP_SECONDS) -> list[FolderCheck]:
    """Check ``folder`` against every pair set (clips over ``max_clip_seconds``, ``evaluation.max_clip_seconds``,
    are per-id problems); refuse a folder that has no usable file at all."""
    checks = [check_folder(folder, p, max_clip_seconds) for p in pair_sets]
    _share_extras(checks)
    if not any(c.usable() for c in checks):
        example = pair_sets[0].ids()[0] if pair_sets and pair_sets[0].samples else "<id>"
        raise ClonebenchError(f"no usable audio for any id in {folder} ({'; '.join(_tally(c) for c in checks)}): "
                              f"expected <id>.wav files such as {example}.wav, as listed by clonebench prompts")
    return checks


def _share_extras(checks: list[FolderCheck]) -> None:
    """With several pair sets (a suite's tasks) a file is extra only when no task uses it, and it is listed once:
    under the task its name starts with (``<task>__`` or ``<task>/``), else under the first task."""
    if len(checks) < 2:
        return
    unclaimed = set.intersection(*(set(c.extra) for c in checks))

    def owner(name: str) -> FolderCheck:
        return next((c for c in checks if name.startswith((c.task + ID_SEPARATOR, c.task + "/"))), checks[0])

    for check in checks:
        check.extra = [name for name in check.extra if name in unclaimed and owner(name) is check]


def tally_parts(check: FolderCheck) -> list[str]:
    """``"3/5 usable"`` then each non-zero problem count (``"missing 2"``): joined with ", " by whoever prints them,
    so a folder without problems ends in no dangling separator."""
    counts = check.counts()
    return [f"{counts['usable']}/{counts['ids']} usable"] + [f"{k} {v}" for k, v in counts.items()
                                                              if v and k not in ("ids", "usable")]


def _tally(check: FolderCheck) -> str:
    return f"task {check.task}: " + ", ".join(tally_parts(check))


def plan(pair_sets: list[PairSet], folders: list[Path], models: list[str] | None, output: Path,
         max_clip_seconds: float | None = DEFAULT_MAX_CLIP_SECONDS) -> list[System]:
    """The systems to score; every folder is checked here, before anything is written (``max_clip_seconds``: the
    scoring settings' ``evaluation.max_clip_seconds``)."""
    names = list(models) if models else [Path(f).resolve().name for f in folders]
    if len(names) != len(folders):
        raise ClonebenchError(f"{len(folders)} --generated folder(s) but {len(names)} --model name(s): give one name "
                              "per folder")
    bad = [n for n in names if not is_safe_name(n)]
    if bad or len(set(names)) != len(names):
        raise ClonebenchError(f"model names must be unique file names (letters, digits, '_', '.', '-'): {names}; "
                              "name them with --model")
    out = Path(output).resolve()
    for folder in folders:
        real = Path(folder).resolve()
        if out == real or real in out.parents or out in real.parents:
            raise ClonebenchError(f"--output {output} and --generated {folder} overlap: the results would be written "
                                  "among the files being scored; choose an output folder outside it")
    single = len(folders) == 1
    return [System(name, Path(folder), Path(output) if single else Path(output) / name, check_folders(pair_sets, folder,
                                                                                                  max_clip_seconds))
            for name, folder in zip(names, folders)]


def request_record(system: System, pair_sets: list[PairSet], scoring_config: dict) -> dict:
    return {"schema": "clonebench.score-request/v1", "model": system.model, "generated": str(system.folder.resolve()),
            "pair_sets": [p.origin for p in pair_sets], "scoring": scoring_config}


def _differences(old: dict, new: dict) -> list[str]:
    return [f"{key}: {a!r} then, {b!r} now" for key, a, b in leaf_differences(old, new)]


def prepare_output(system: System, request: dict, resume: bool) -> None:
    """Refuse a used output folder unless resuming the same request (naming what changed)."""
    path = system.out_dir / REQUEST
    fresh = not system.out_dir.exists() or (system.out_dir.is_dir() and not any(system.out_dir.iterdir()))
    if resume and not fresh:  # a model that a killed batch never started is simply scored (as rvcbench does)
        if not path.is_file():
            raise ClonebenchError(f"--resume: {system.out_dir} holds no {REQUEST}; it is not a scoring output "
                                  "(drop --resume and choose a new --output)")
        old = json.loads(path.read_text(encoding="utf-8"))
        changed = _differences(old, request)
        if changed:
            raise ClonebenchError(f"--resume: {system.out_dir} was scored with another request: "
                                  + "; ".join(changed[:10]) + ". Choose a new --output folder")
    elif not resume and not fresh:
        raise ClonebenchError(f"{system.out_dir} exists and is not empty; choose a new --output folder "
                              "(or pass --resume to continue scoring it)")


def task_summary(run_dir: str, result: dict | None, check: FolderCheck | None) -> dict:
    """One task of ``score.json``: its run folder (relative), status, means (clonebench names) and check counts;
    ``result`` is its metrics.json (None: not scored)."""
    if result is None:
        return {"run_dir": run_dir, "status": "not_scored", "means": {}, "check": check.counts() if check else None}
    return {"run_dir": run_dir, "status": result["status"],
            "means": {m: e["mean"] for m, e in result["metrics"].items()}, "n_requested": result["n_requested"],
            "check": check.counts() if check else None, "scorer_fingerprints": result["scorer_fingerprints"],
            "input_fingerprint": result["input_fingerprint"]}


def write_summary(system: System, tasks: dict[str, dict], **extra) -> dict:
    """``score.json``: the model, its folder, the overall status and ``tasks`` (``task_summary`` each)."""
    status = "complete" if all(t["status"] == "complete" for t in tasks.values()) else "partial"
    summary = {"schema": "clonebench.score/v1", "model": system.model, "generated": str(system.folder.resolve()),
               "status": status, **extra, "tasks": tasks}
    atomic_write_json(system.out_dir / SUMMARY, summary)
    return summary


@contextmanager
def open_outputs(systems: list[System], requests: list[dict], resume: bool) -> Iterator[None]:
    """Every system's output folder refused when used (unless resuming the same request), then locked and given
    its request and check files; the locks are released on the way out. Both folder-scoring paths (pair sets
    here, suites in ``external.score_suite``) open their outputs this one way."""
    for system, request in zip(systems, requests):
        prepare_output(system, request, resume)
    locks = RunLocks()
    try:
        for system, request in zip(systems, requests):
            system.out_dir.mkdir(parents=True, exist_ok=True)
            locks.own(system.out_dir)
            atomic_write_json(system.out_dir / REQUEST, request)
            atomic_write_json(system.out_dir / CHECK, {"schema": "clonebench.submission-check/v1",
                                                       "model": system.model,
                                                       "tasks": [c.as_dict() for c in system.checks]})
        yield
    finally:
        locks.release()


def score_systems(settings, header: dict, pair_sets: list[PairSet], systems: list[System], resume: bool,
                  scoring_config: dict) -> list[dict]:
    """Record every system's folder as runs and score them all with each scorer loaded once; summaries."""
    requests = [request_record(s, pair_sets, scoring_config) for s in systems]
    with open_outputs(systems, requests, resume):
        jobs = []
        for system, request in zip(systems, requests):
            for pair_set, check in zip(pair_sets, system.checks):
                run_dir = system.out_dir / pair_set.task
                run_header = {**header, "run_name": system.model, "request_sha256": digest(request)}
                record_external(run_dir, run_header, pair_set, check)
                jobs.append(EvaluationJob(run_dir, run_dir, list(pair_set.samples), run_header))
        metrics = run_evaluations(settings, jobs)
        summaries, k = [], 0
        for system in systems:
            summaries.append(write_summary(system, {
                p.task: task_summary(p.task, result, check)
                for p, check, result in zip(pair_sets, system.checks, metrics[k:k + len(pair_sets)])}))
            k += len(pair_sets)
        return summaries


def score_external_folder(settings, run_dir: Path, header: dict, samples: list) -> dict:
    """``run_vc.py +vc.evaluate_only=true +vc.evaluation.generated_audio_dir=FOLDER`` for a folder made outside
    clonebench: the run's own pairs (``dataset.*``) name the ids (task: ``+vc.evaluation.task``, else the rows'
    dataset_name in lower case); the folder is checked, recorded into ``run_dir`` and scored there."""
    ds = settings.dataset
    if ds.use_hf_dataset:
        origin = {"kind": "hf_dataset", "hf_path": ds.hf_path, "hf_config": ds.hf_config, "hf_split": ds.hf_split}
    else:
        origin = manifest_origin(ds.manifest_filename, ds.root_path, Selection(ds.manifest_variant, ds.speaker_id))
    source = str(ds.manifest_filename or ds.hf_path)
    pair_set = from_samples(samples, settings.evaluation.task, origin, source)
    folder = settings.evaluation.generated_audio_dir
    try:
        check = check_folders([pair_set], folder, settings.evaluation.max_clip_seconds)[0]
    except ClonebenchError as exc:
        raise ClonebenchError(f"vc.evaluation.generated_audio_dir={folder} is no generation run (no run_manifest.json "
                              f"in it), so it was read as a folder made outside clonebench, and: {exc}") from None
    log.info("%s", _tally(check))
    for line in check.lines():
        log.warning("%s", line)
    locks = RunLocks()
    try:
        locks.own(run_dir)
        atomic_write_json(run_dir / CHECK, {"schema": "clonebench.submission-check/v1", "model": header.get("run_name"),
                                            "tasks": [check.as_dict()]})
        header = {**header, "phase": "external+evaluate"}
        record_external(run_dir, header, pair_set, check)
        return run_evaluation(settings, run_dir, run_dir, samples, header)
    finally:
        locks.release()
