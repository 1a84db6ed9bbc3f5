"""The evaluate phase: saved WAVs -> one scorer group at a time (cached, batched) -> CSV, metrics, provenance."""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from clonebench.data.identity import digest
from clonebench.evaluate.aggregate import summarise
from clonebench.evaluate.assets import AssetError
from clonebench.evaluate.base import Scorer, ScoreItem, ScoreRecord
from clonebench.evaluate.cache import MetricCache
from clonebench.evaluate.device import execution, resolve_device
from clonebench.evaluate.inputs import Requested, duration, load_requested
from clonebench.evaluate.outputs import write_csv, write_json
from clonebench.evaluate.overlap import run_groups, shares_cores
from clonebench.evaluate.progress import ScoringProgress
from clonebench.evaluate.registry import METRIC_GROUPS, groups_for, scorer_class
from clonebench.evaluate.validity import checked, too_short
from clonebench.evaluate.threads import warn_if_slow
from clonebench.hashing import HashCache
from clonebench.provenance import package_versions
from clonebench.settings import RunSettings

log = logging.getLogger(__name__)


def scorer_provenance(scorer: Scorer, batch_size: int) -> dict[str, Any]:
    """Everything that decides a scorer's numbers; its digest is part of every cache key.

    The batch size is recorded but not fingerprinted: every scorer's value for a pair is independent of the
    batch it is scored in (tests/integration/test_metric_purity.py), so records scored with any batch size
    are interchangeable. Device, torch/CUDA versions and thread count stay in the fingerprint."""
    sources = {str(p.name): hashlib.sha256(p.read_bytes()).hexdigest() for p in scorer.source_files()}
    block = {"scorer": scorer.name, "class": type(scorer).__name__, "metrics": list(scorer.metrics),
             "version": scorer.version(), "protocol": scorer.protocol(), "needs_reference": scorer.needs_reference, "needs_text": scorer.needs_text,
             "uses_gpu": scorer.uses_gpu, "sample_rate": scorer.sample_rate, "source_sha256": sources,
             "packages": package_versions(scorer.packages(), include_missing=True),
             "assets": [{k: v for k, v in a.items() if k != "source"} for a in scorer.assets()],
             "seed_policy": scorer.seed_policy + "; torch.manual_seed(0) before scoring",
             "min_duration_s": scorer.min_duration_s, "execution": execution(scorer.device)}
    block["fingerprint"] = digest(block)
    block["batch_size"] = batch_size
    block["asset_sources"] = [a.get("source") for a in scorer.assets()]
    return block


def _score(scorer: Scorer, items: list[ScoreItem]) -> list[ScoreRecord]:
    """Records for ``items`` in order: clips too short for the scorer and invalid values become errors."""
    short = {item.sample_id: too_short(scorer, item) for item in items}
    usable = [item for item in items if short[item.sample_id] is None]
    records = _score_usable(scorer, usable) if usable else []
    scored = {item.sample_id: checked(scorer.name, r) for item, r in zip(usable, records)}
    return [short[item.sample_id] or scored[item.sample_id] for item in items]


def _score_usable(scorer: Scorer, items: list[ScoreItem]) -> list[ScoreRecord]:
    try:
        return scorer.score_batch(items)
    except Exception as exc:  # isolate the bad item: score one at a time, keep the others
        if len(items) == 1:
            return [ScoreRecord(items[0].sample_id, error=f"{type(exc).__name__}: {exc}")]
        log.warning("%s batch failed (%r); scoring its %d items one at a time", scorer.name, exc, len(items))
        return [r for item in items for r in _score_usable(scorer, [item])]


def make_scorer(group: str, settings, device: str, hash_cache: HashCache) -> Scorer:
    """The scorer of ``group`` as the run's settings configure it (not loaded yet)."""
    evaluation = settings.evaluation
    cls = scorer_class(group, evaluation.scorer_options["whisper"]["backend"])
    return cls(evaluation.scorer_options[group], device if cls.uses_gpu else "cpu", hash_cache)


def score_items(scorer: Scorer, fingerprint: str, items: list[ScoreItem], cache: MetricCache | None,
                batch_size: int, progress: ScoringProgress | None = None) -> tuple[dict[str, ScoreRecord], int]:
    """Records of ``items`` by sample id (trusted cache hits first, the rest scored in batches) and the number of
    hits. Damaged cache records are misses, logged once per group with a count per reason."""
    group = scorer.name
    results: dict[str, ScoreRecord] = {}
    todo = []
    for item in items:
        cached = cache.lookup(group, fingerprint, item, scorer.metrics) if cache is not None else None
        if cached is not None:
            results[item.sample_id] = cached
        else:
            todo.append(item)
    for line in cache.report(group, damaged=True) if cache is not None else []:
        log.warning("%s", line)
    if progress is not None:
        progress.start(group, fingerprint, len(items), len(items) - len(todo))
    with tqdm(total=len(items), initial=len(items) - len(todo), desc=f"score {group}", unit="wav") as bar:
        for start in range(0, len(todo), batch_size):
            batch = todo[start:start + batch_size]
            for item, record in zip(batch, _score(scorer, batch)):
                results[item.sample_id] = record
                if cache is not None:
                    cache.store(group, fingerprint, item, record, scorer.metrics)
            if progress is not None:
                progress.scored(group, len(batch))  # after the batch's records are in the cache
            bar.update(len(batch))
    for line in cache.report(group, damaged=False) if cache is not None else []:
        log.warning("%s", line)
    if progress is not None:
        progress.done(group)
    return results, len(items) - len(todo)


def run_group_jobs(group: str, settings, device: str, jobs: list[tuple], hash_cache: HashCache
                   ) -> list[tuple[dict, dict[str, ScoreRecord]]]:
    """Load ``group``'s scorer once and score every job's items with it: (provenance, records) per job.
    A job is ``(items, cache)`` or ``(items, cache, progress)``."""
    import torch

    scorer = make_scorer(group, settings, device, hash_cache)
    started = time.perf_counter()
    try:
        scorer.load()
    except AssetError as exc:
        scorer.release()
        if getattr(type(scorer), "verified", True):
            raise
        return [not_run(scorer, exc, items, *rest) for items, cache, *rest in jobs]
    try:
        provenance = scorer_provenance(scorer, settings.evaluation.batch_size)
        torch.manual_seed(0)
        out = []
        for items, cache, *rest in jobs:
            results, hits = score_items(scorer, provenance["fingerprint"], items, cache,
                                        settings.evaluation.batch_size, rest[0] if rest else None)
            out.append(({**provenance, "cached": hits, "scored": len(items) - hits}, results))
        seconds = round(time.perf_counter() - started, 3)
        for job_provenance, _ in out:
            job_provenance["seconds"] = seconds
        return out
    finally:
        scorer.release()  # free (GPU) memory before the next scorer loads


def not_run(scorer: Scorer, exc: AssetError, items: list[ScoreItem], progress: ScoringProgress | None = None
            ) -> tuple[dict, dict[str, ScoreRecord]]:
    """An unverified scorer (UTMOS, emotion) whose assets were not given: the other metrics are scored, each item
    gets an error naming it, and the run is ``partial`` (a requested metric is never dropped silently)."""
    reason = f"{scorer.name} scorer not run: it is unverified and its assets were not given ({exc})"
    log.warning(reason)
    if progress is not None:
        progress.start(scorer.name, None, len(items), 0)
        progress.done(scorer.name)
    provenance = {"scorer": scorer.name, "class": type(scorer).__name__, "metrics": list(scorer.metrics),
                  "status": "not_run", "reason": reason, "verified_scorer": False, "fingerprint": None}
    return provenance, {item.sample_id: ScoreRecord(item.sample_id, error="scorer not run (assets not given)")
                        for item in items}


def run_group(group: str, settings, device: str, items: list[ScoreItem], cache: MetricCache,
              hash_cache: HashCache, progress: ScoringProgress | None = None) -> tuple[dict, dict[str, ScoreRecord]]:
    return run_group_jobs(group, settings, device, [(items, cache, progress)], hash_cache)[0]


def _row(req: Requested) -> dict:
    s, o = req.sample, req.outcome
    return {"sample_id": s.sample_id, "pair_id": s.pair_id, "speaker_id": s.speaker_id,
            "generation_status": o.status.value if o else "pending",
            "generated_audio": str(req.item.generated_path) if req.item else None,
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
    requested: list[Requested] = field(default_factory=list)
    source: dict = field(default_factory=dict)
    cache: MetricCache | None = None
    rows: dict = field(default_factory=dict)
    scorers: dict = field(default_factory=dict)
    progress: ScoringProgress | None = None

    @property
    def items(self) -> list[ScoreItem]:
        return [r.item for r in self.requested if r.item is not None]


def run_evaluation(settings: RunSettings, run_dir: Path, source_run: Path, samples, header: dict) -> dict:
    """Score the generation run ``source_run`` into ``run_dir``; returns metrics.json's content."""
    return run_evaluations(settings, [EvaluationJob(run_dir, source_run, samples, header)])[0]


def run_evaluations(settings: RunSettings, jobs: list[EvaluationJob]) -> list[dict]:
    """Score several runs with each scorer loaded once (scorer group outside, runs inside); metrics.json each.

    Each run keeps a durable progress file (`clonebench status` reads it after a kill) and a scoring lock."""
    import torch

    evaluation = settings.evaluation
    started = time.time()
    groups = groups_for(evaluation.metrics)
    try:
        for job in jobs:
            job.progress = ScoringProgress(job.run_dir, groups, job.source_run)
        for job in jobs:
            job.requested, job.source = load_requested(job.source_run, job.samples)
            job.cache = MetricCache(job.run_dir, evaluation.cache_dir)
            job.rows = {r.sample.sample_id: _row(r) for r in job.requested}
        if evaluation.cpu_threads:
            torch.set_num_threads(evaluation.cpu_threads)
        warn_if_slow(torch.get_num_threads())  # thread settings that would slow scoring
        device, warning = resolve_device(evaluation.device)
        backend = evaluation.scorer_options["whisper"]["backend"]
        for group in groups:  # missing packages or programs: refused before any scoring
            scorer_class(group, backend).preflight(evaluation.scorer_options[group])
        for job in jobs:
            job.progress.ready(len(job.items))
        _score_groups(settings, device, jobs, groups)
        results = [_write_outputs(settings, job, device, warning, started) for job in jobs]
    except Exception as exc:
        for job in jobs:
            if job.progress is not None and job.progress.state.get("state") != "finished":
                job.progress.fail(f"{type(exc).__name__}: {exc}")
        raise
    finally:
        for job in jobs:
            if job.progress is not None:
                job.progress.close()  # the scoring lock goes (at once, even when scoring failed)
    return results


def _score_groups(settings: RunSettings, device: str, jobs: list[EvaluationJob], groups: list[str]) -> None:
    """Every scorer group's records into each job's rows and provenance (``job.scorers``)."""
    hash_cache = HashCache(settings.hash_cache)
    try:
        # single-threaded scorer groups run beside the others (evaluate/overlap.py)
        backend = settings.evaluation.scorer_options["whisper"]["backend"]
        for group, per_job in run_groups(
                groups, lambda g: scorer_class(g, backend).runs_beside_others,
                lambda g, hc: run_group_jobs(g, settings, device, [(j.items, j.cache, j.progress) for j in jobs], hc),
                hash_cache, settings.hash_cache, lambda g: shares_cores(g, backend)):
            for job, (provenance, results) in zip(jobs, per_job):
                job.scorers[group] = provenance
                for sample_id, record in results.items():
                    if record.ok:
                        job.rows[sample_id].update(record.values)
                    else:
                        job.rows[sample_id]["errors"].append(f"{group}: {record.error}")
    finally:
        hash_cache.close()


def _write_outputs(settings: RunSettings, job: EvaluationJob, device: str, warning: str | None, started: float) -> dict:
    evaluation = settings.evaluation
    ordered = [job.rows[r.sample.sample_id] for r in job.requested]
    not_scored = {g: p["reason"] for g, p in job.scorers.items() if p.get("status") == "not_run"}
    reasons = list(not_scored.values())
    for row in ordered:
        missing = [m for m in evaluation.metrics if row.get(m) is None]
        if missing:
            reasons.append(f"{row['pair_id']}: no {missing}: {'; '.join(row['errors']) or 'not scored'}")
        row["errors"] = " | ".join(row["errors"])
    status = "complete" if not reasons else "partial"
    summary = summarise(ordered, list(evaluation.metrics), len(job.requested), evaluation.bootstrap_resamples,
                        evaluation.confidence, evaluation.bootstrap_seed)
    metrics = {"status": status, "reasons": reasons, "n_requested": len(job.requested), "scorers_not_run": not_scored,
               "metrics": summary, "scorer_fingerprints": {g: p["fingerprint"] for g, p in job.scorers.items()},
               "input_fingerprint": job.source["fingerprints"]["input"], "device": device}
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
        "started_at": started, "finished_at": time.time()})
    job.progress.finish(status)  # last: a run killed before this line is reported as interrupted
    log.info("evaluation %s: %s", status, {m: v["mean"] for m, v in summary.items()})
    return metrics
