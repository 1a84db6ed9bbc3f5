"""The evaluate phase: saved WAVs of one or more runs -> one scorer group at a time (each loaded once for every
run; cached, batched: evaluate/scoring.py) -> per run CSV, metrics, provenance and a durable progress file.

The runs of one pass may be scored with different protocols (a suite's tasks: ``EvaluationJob.evaluation``): a
scorer is then loaded once for every run whose protocol configures it the same way (same group, same options),
so a whole suite loads each model once and starts its CPU pool once."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from clonebench.core.hashing import HashCache
from clonebench.core.runpaths import recorded
from clonebench.evaluate.execution import overlap
from clonebench.evaluate.execution.cache import MetricCache
from clonebench.evaluate.execution.cpu_pool import CpuPool, pool_workers
from clonebench.evaluate.execution.device import resolve_device
from clonebench.evaluate.execution.overlap import run_groups, shares_cores
from clonebench.evaluate.execution.progress import ScoringProgress
from clonebench.evaluate.execution.threads import available_cores, pin_blas_threads, warn_if_slow
from clonebench.evaluate.inputs import Requested, duration, load_requested, refuse_long_clips
from clonebench.evaluate.outputs import write_csv, write_json
from clonebench.evaluate.protocols.base import ScoreItem
from clonebench.evaluate.protocols.registry import METRIC_GROUPS, groups_for, scorer_class
from clonebench.evaluate.scoring import ScorerGroupFailed, run_group_jobs
from clonebench.failures.flags import finalise
from clonebench.failures.rates import failure_rates
from clonebench.stats.utterance import summarise

if TYPE_CHECKING:
    from clonebench.evaluate.settings import EvaluationSettings, ScoringSettings

log = logging.getLogger(__name__)


def _row(req: Requested, run_dir: Path) -> dict:
    """One CSV row; the generated clip is recorded relative to ``run_dir`` when it lies inside it (a run can move:
    ``core/runpaths.py``), the dataset's target as it is."""
    s, o = req.sample, req.outcome
    return {"sample_id": s.sample_id, "pair_id": s.pair_id, "speaker_id": s.speaker_id,
            "generation_status": o.status.value if o else "pending",
            "generated_audio": recorded(run_dir, req.item.generated_path) if req.item else None,
            "generated_sha256": o.audio_sha256 if o else None,
            "target_audio": str(s.target.path) if s.target.path else None, "target_sha256": s.target.sha256,
            "target_text": s.row.target_text, "language": s.row.target_language,
            "generated_duration_s": o.duration_s if o else None, "target_duration_s": duration(s.target.path),
            "synthesis_time_s": o.synthesis_time_s if o else None, "errors": [req.problem] if req.problem else []}


@dataclass
class EvaluationJob:
    """One run to score: the generation run ``source_run`` scored into ``run_dir``."""

    run_dir: Path
    source_run: Path
    samples: list
    header: dict
    requested: list[Requested] | None = None   # None: read from source_run (load_requested); given: scored as is
    source: dict = field(default_factory=dict)
    evaluation: EvaluationSettings | None = None  # this run's protocol (a suite task's); None: the pass's settings
    cache: MetricCache | None = None
    rows: dict = field(default_factory=dict)
    scorers: dict = field(default_factory=dict)
    progress: ScoringProgress | None = None

    @property
    def items(self) -> list[ScoreItem]:
        return [r.item for r in self.requested or () if r.item is not None]


def run_evaluation(settings: ScoringSettings, run_dir: Path, source_run: Path, samples, header: dict) -> dict:
    """Score the generation run ``source_run`` into ``run_dir``; returns metrics.json's content."""
    return run_evaluations(settings, [EvaluationJob(run_dir, source_run, samples, header)])[0]


# what one pass shares: a run's protocol may differ in metrics, Whisper's options, seed and bootstrap, not in these
SHARED = ("device", "batch_size", "cpu_threads", "cpu_workers", "cache_dir")


def _protocol(settings: ScoringSettings, job: EvaluationJob) -> EvaluationSettings:
    return job.evaluation or settings.evaluation


def _shared(settings: ScoringSettings, jobs: list[EvaluationJob]) -> EvaluationSettings:
    """The settings every job of the pass shares (ValueError when a job's protocol changes one of them)."""
    base = settings.evaluation
    for job in jobs:
        differ = [k for k in SHARED if getattr(_protocol(settings, job), k) != getattr(base, k)]
        if differ:
            raise ValueError(f"{job.run_dir}: its protocol changes {differ}, which one evaluate pass shares")
    return base


def _job_options(settings: ScoringSettings, job: EvaluationJob, group: str) -> str:
    """What configures ``group``'s scorer for ``job``: the jobs with equal keys share one loaded scorer."""
    options = _protocol(settings, job).scorer_options
    return json.dumps([options["whisper"]["backend"], options[group]], sort_keys=True, default=str)


def run_evaluations(settings: ScoringSettings, jobs: list[EvaluationJob]) -> list[dict]:
    """Score several runs with each scorer loaded once per configuration (scorer group outside, runs inside);
    metrics.json each.

    Each run keeps a durable progress file (`clonebench status` reads it after a kill) and a scoring lock."""
    import torch

    evaluation = _shared(settings, jobs)
    started = time.time()
    groups = groups_for(tuple(m for job in jobs for m in _protocol(settings, job).metrics))
    device, warning = resolve_device(evaluation.device)  # a device torch cannot see fails before anything loads
    pool = None
    try:
        for job in jobs:
            job.progress = ScoringProgress(job.run_dir, groups_for(_protocol(settings, job).metrics), job.source_run)
        for job in jobs:
            if job.requested is None:
                job.requested, job.source = load_requested(job.source_run, job.samples)
            job.cache = MetricCache(job.run_dir, evaluation.cache_dir)
            if isinstance(job.source, dict) and isinstance(job.source.get("run_dir"), str):
                job.source = {**job.source, "run_dir": recorded(job.run_dir, job.source["run_dir"])}
            job.rows = {r.sample.sample_id: _row(r, job.run_dir) for r in job.requested}
        for job in jobs:  # clips longer than evaluation.max_clip_seconds: refused before any scorer loads
            refuse_long_clips(job.items, _protocol(settings, job).max_clip_seconds)
        if evaluation.cpu_threads:
            torch.set_num_threads(evaluation.cpu_threads)
        if device == "cpu":
            warn_if_slow(torch.get_num_threads())  # thread settings that would slow scoring
        for job in jobs:  # missing packages or programs: refused before any scoring
            protocol = _protocol(settings, job)
            for group in groups_for(protocol.metrics):
                scorer_class(group, protocol.scorer_options["whisper"]["backend"]).preflight(
                    protocol.scorer_options[group])
        for job in jobs:
            job.progress.ready(len(job.items))
        workers = pool_workers(evaluation.cpu_workers, sum(len(j.items) for j in jobs), available_cores())
        pool = CpuPool(workers, settings.hash_cache) if workers else None
        try:
            _score_groups(settings, device, jobs, groups, pool)
        except ScorerGroupFailed as exc:  # the run failed; scored records are cached, so running again resumes
            for job in jobs:
                write_json(job.run_dir / "scoring_manifest.json", {
                    "schema": "clonebench.scoring/v1", **job.header, "status": "failed", "reasons": [str(exc)],
                    "source_run": job.source, "device": device, "device_warning": warning,
                    "metric_groups": {m: METRIC_GROUPS[m] for m in _protocol(settings, job).metrics},
                    "started_at": started, "finished_at": time.time()})
            raise
        results = [_write_outputs(settings, job, device, warning, started, workers) for job in jobs]
    except Exception as exc:
        for job in jobs:
            if job.progress is not None and job.progress.state.get("state") != "finished":
                job.progress.fail(f"{type(exc).__name__}: {exc}")
        raise
    finally:
        if pool is not None:
            pool.close()
        for job in jobs:
            if job.progress is not None:
                job.progress.close()  # the scoring lock goes (at once, even when scoring failed)
    return results


@dataclass(frozen=True)
class _Scoring:
    """The settings ``run_group_jobs`` reads for one loaded scorer: its protocol and the hash cache."""

    evaluation: EvaluationSettings
    hash_cache: Path | None


def _score_groups(settings: ScoringSettings, device: str, jobs: list[EvaluationJob], groups: list[str],
                  pool: CpuPool | None) -> None:
    """Every scorer group's records into each job's rows and provenance (``job.scorers``)."""
    backend = settings.evaluation.scorer_options["whisper"]["backend"]
    on_gpu = device.startswith("cuda")
    overlap.gpu_foreground(on_gpu)
    pin_blas_threads()  # before any scorer thread starts (evaluate/execution/threads.py)

    def beside(group: str) -> bool:  # scored beside the others: one-thread groups, and the pooled ones
        cls = scorer_class(group, backend)
        return cls.runs_beside_others or (pool is not None and cls.cpu_bound)

    def shares(group: str) -> bool:  # lets the background run beside it (GPU groups leave the cores)
        return (on_gpu and scorer_class(group, backend).uses_gpu) or shares_cores(group, backend)

    def run_one(group: str, hc: HashCache) -> list[tuple[EvaluationJob, tuple]]:
        """One load of the scorer per configuration of ``group`` among the jobs that use it."""
        configurations: dict[str, list[EvaluationJob]] = {}
        for job in jobs:
            if group in groups_for(_protocol(settings, job).metrics):
                configurations.setdefault(_job_options(settings, job, group), []).append(job)
        out = []
        for members in configurations.values():
            scoring = _Scoring(_protocol(settings, members[0]), settings.hash_cache)
            per_job = run_group_jobs(group, scoring, device, [(j.items, j.cache, j.progress) for j in members], hc,
                                     pool)
            out += list(zip(members, per_job))
        return out

    hash_cache = HashCache(settings.hash_cache)
    try:
        for group, scored in run_groups(groups, beside, run_one, hash_cache, settings.hash_cache, shares):
            for job, (provenance, results) in scored:
                job.scorers[group] = provenance
                for sample_id, record in results.items():
                    if record.ok:
                        job.rows[sample_id].update(record.values)
                    else:
                        job.rows[sample_id]["errors"].append(f"{group}: {record.error}")
    finally:
        hash_cache.close()


def _write_outputs(settings: ScoringSettings, job: EvaluationJob, device: str, warning: str | None, started: float,
                   workers: int) -> dict:
    evaluation = _protocol(settings, job)
    ordered = [job.rows[r.sample.sample_id] for r in job.requested]
    for row in ordered:
        finalise(row)  # failure modes: the audio measurements with the Whisper values of the same clip
    not_scored = {g: p["reason"] for g, p in job.scorers.items() if p.get("status") == "not_run"}
    reasons = list(not_scored.values())
    for row in ordered:
        missing = [m for m in evaluation.metrics if row.get(m) is None]
        if missing:
            reasons.append(f"{row['pair_id']}: no {missing}: {'; '.join(row['errors']) or 'not scored'}")
        row["errors"] = " | ".join(row["errors"])
    status = "complete" if not reasons else "partial"
    summary = summarise(ordered, list(evaluation.metrics), len(job.requested), evaluation.bootstrap_resamples,
                        evaluation.confidence, evaluation.bootstrap_seed, evaluation.seed)
    metrics = {"status": status, "reasons": reasons, "n_requested": len(job.requested), "scorers_not_run": not_scored,
               "metrics": summary, "scorer_fingerprints": {g: p["fingerprint"] for g, p in job.scorers.items()},
               "input_fingerprint": job.source["fingerprints"]["input"], "device": device}
    if "fail" in evaluation.metrics:
        metrics["failure_modes"] = failure_rates(ordered, evaluation.confidence)
    cache = job.cache
    write_csv(job.run_dir / "generation_sample_metrics.csv", ordered)
    write_json(job.run_dir / "metrics.json", metrics)
    write_json(job.run_dir / "scoring_manifest.json", {
        "schema": "clonebench.scoring/v1", **job.header, "status": status, "reasons": reasons,
        "source_run": job.source, "device": device, "device_warning": warning,
        "metric_groups": {m: METRIC_GROUPS[m] for m in evaluation.metrics}, "scorers": job.scorers,
        "cache": {"hits": cache.hits, "misses": cache.misses, "shared_dir": str(evaluation.cache_dir),
                  "not_trusted": {g: dict(c) for g, c in cache.damaged.items()},
                  "not_written": {g: dict(c) for g, c in cache.unwritable.items()}},
        "cpu_pool_workers": workers, "started_at": started, "finished_at": time.time()})
    job.progress.finish(status)  # last: a run killed before this line is reported as interrupted
    log.info("evaluation %s: %s", status, {m: v["mean"] for m, v in summary.items()})
    return metrics
