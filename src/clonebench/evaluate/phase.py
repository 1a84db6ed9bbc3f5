"""The evaluate phase: saved WAVs -> one scorer group at a time (cached, batched) -> CSV, metrics, provenance."""

from __future__ import annotations

import hashlib
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from clonebench.data.identity import digest
from clonebench.errors import ClonebenchError
from clonebench.evaluate import overlap
from clonebench.evaluate.aggregate import summarise
from clonebench.evaluate.base import Scorer, ScoreItem, ScoreRecord
from clonebench.evaluate.cache import MetricCache, record_key
from clonebench.evaluate.cpu_pool import CpuPool, pool_workers
from clonebench.evaluate.device import execution, resolve_device
from clonebench.evaluate.inputs import Requested, duration, load_requested
from clonebench.evaluate.outputs import write_csv, write_json
from clonebench.evaluate.overlap import run_groups, shares_cores
from clonebench.evaluate.precision import policy
from clonebench.evaluate.registry import METRIC_GROUPS, groups_for, scorer_class
from clonebench.evaluate.validity import checked, too_short
from clonebench.evaluate.threads import available_cores, pin_blas_threads, warn_if_slow
from clonebench.hashing import HashCache
from clonebench.provenance import package_versions

if TYPE_CHECKING:  # the run's settings import the HTTP client; scoring alone must not need it
    from clonebench.settings import RunSettings

log = logging.getLogger(__name__)


class ScorerGroupFailed(ClonebenchError):
    """Every item a scorer group tried failed with one and the same error: the cause is not in the audio."""


def scorer_provenance(scorer: Scorer, batch_size: int, threads: int | None = None) -> dict[str, Any]:
    """Everything that decides a scorer's numbers; its digest is part of every cache key.

    The batch size is recorded but not fingerprinted: every scorer's value for a pair is independent of the
    batch it is scored in (tests/integration/test_metric_purity.py), so records scored with any batch size
    are interchangeable. Device, torch/CUDA versions, precision (in the protocol, and the GPU's flags) stay in
    the fingerprint, and the CPU thread count ``threads`` where the numbers depend on it (evaluate/device.py)."""
    sources = {str(p.name): hashlib.sha256(p.read_bytes()).hexdigest() for p in scorer.source_files()}
    facts, host = execution(scorer.device, threads)
    block = {"scorer": scorer.name, "class": type(scorer).__name__, "metrics": list(scorer.metrics),
             "version": scorer.version(), "protocol": {**scorer.protocol(), "precision": scorer.precision()},
             "needs_reference": scorer.needs_reference, "needs_text": scorer.needs_text,
             "uses_gpu": scorer.uses_gpu, "sample_rate": scorer.sample_rate, "source_sha256": sources,
             "packages": package_versions(scorer.packages(), include_missing=True),
             "assets": [{k: v for k, v in a.items() if k != "source"} for a in scorer.assets()],
             "seed_policy": scorer.seed_policy + "; torch.manual_seed(0) before scoring",
             "min_duration_s": scorer.min_duration_s, "execution": {**facts, **scorer.execution_facts()}}
    block["fingerprint"] = digest(block)
    block["batch_size"] = batch_size
    block["host"] = host  # recorded, not fingerprinted
    block["asset_sources"] = [a.get("source") for a in scorer.assets()]
    return block


def _score(scorer: Scorer, items: list[ScoreItem]) -> list[ScoreRecord]:
    """Records for ``items`` in order: clips too short for the scorer and invalid values become errors."""
    return score_chunk(scorer, items)[0]


def score_chunk(scorer: Scorer, items: list[ScoreItem]) -> tuple[list[ScoreRecord], set[str], int]:
    """``_score``'s records, the ids of the items whose error the scorer raised, and how many items the scorer
    ran on (not too short): what the fail-fast needs."""
    short = {item.sample_id: too_short(scorer, item) for item in items}
    usable = [item for item in items if short[item.sample_id] is None]
    raised: set[str] = set()
    records = _score_usable(scorer, usable, raised) if usable else []
    scored = {item.sample_id: checked(scorer.name, r) for item, r in zip(usable, records)}
    return [short[item.sample_id] or scored[item.sample_id] for item in items], raised, len(usable)


def _score_usable(scorer: Scorer, items: list[ScoreItem], raised: set[str]) -> list[ScoreRecord]:
    try:
        return scorer.score_batch(items)
    except Exception as exc:  # isolate the bad item: score one at a time, keep the others
        if len(items) == 1:
            raised.add(items[0].sample_id)
            return [ScoreRecord(items[0].sample_id, error=f"{type(exc).__name__}: {exc}")]
        log.warning("%s batch failed (%r); scoring its %d items one at a time", scorer.name, exc, len(items))
        return [r for item in items for r in _score_usable(scorer, [item], raised)]


def fail_fast(group: str, device: str, tried: int, errors: dict[str, str]) -> None:
    """Raise ScorerGroupFailed when every one of ``tried`` (>= 2) items the scorer ran on raised the same error
    (``errors``: sample id -> error of those that raised): one error for the run, not one copy per sample."""
    if tried < 2 or len(errors) != tried or len(set(errors.values())) != 1:
        return
    error = next(iter(errors.values()))
    raise ScorerGroupFailed(
        f"scorer {group} on {device}: all {tried} items failed with the same error, so the cause is not in the "
        f"audio: {error}. Fix it and run again (every record already scored is cached); clonebench doctor --eval "
        "checks the installation")


def fingerprint_threads(scorer: Scorer, pooled: bool, torch_threads: int) -> int | None:
    """The CPU thread count that enters the fingerprint: the one the numbers were computed with, for a scorer on a
    CPU whose numbers depend on it (one in the CPU pool); None on a GPU and for thread-independent scorers."""
    if scorer.device != "cpu" or not scorer.threads_change_numbers:
        return None
    return CpuPool.threads if pooled else torch_threads


def _in_process(scorer: Scorer, batches: list[list[ScoreItem]]):
    for batch in batches:
        overlap.check_stop()  # the other thread's groups failed: stop here
        yield score_chunk(scorer, batch)


def run_group(group: str, settings, device: str, items: list[ScoreItem], cache: MetricCache,
              hash_cache: HashCache, pool: CpuPool | None = None) -> tuple[dict, dict[str, ScoreRecord]]:
    """Score ``items`` with ``group``'s scorer (cached records reused); a CPU-bound group goes to ``pool``."""
    import torch

    evaluation = settings.evaluation
    pin_blas_threads()  # features computed with numpy's BLAS give the same bits on every host
    backend = evaluation.scorer_options["whisper"]["backend"]
    cls = scorer_class(group, backend)
    scorer = cls(evaluation.scorer_options[group], device if cls.uses_gpu else "cpu", hash_cache)
    pooled = pool is not None and cls.cpu_bound
    threads = fingerprint_threads(scorer, pooled, torch.get_num_threads())
    started = time.perf_counter()
    with policy(scorer.device):  # IEEE float32 on a GPU (evaluate/precision.py)
        scorer.load()
        try:
            provenance = scorer_provenance(scorer, evaluation.batch_size, threads)
            fingerprint = provenance["fingerprint"]
            results: dict[str, ScoreRecord] = {}
            todo = []
            for item in items:
                cached = cache.get(group, record_key(fingerprint, item))
                if cached is not None and checked(scorer.name, cached).ok:
                    results[item.sample_id] = cached
                else:
                    todo.append(item)
            torch.manual_seed(0)
            size = pool.chunk_size(len(todo), evaluation.batch_size) if pooled else evaluation.batch_size
            batches = [todo[k:k + size] for k in range(0, len(todo), size)]
            scored = (pool.score(group, backend, evaluation.scorer_options[group], batches, overlap.spare_cores)
                      if pooled else _in_process(scorer, batches))
            tried, errors = 0, {}
            with tqdm(total=len(items), initial=len(items) - len(todo), desc=f"score {group}", unit="wav") as bar:
                for batch, (records, raised, usable) in zip(batches, scored):
                    tried += usable
                    for item, record in zip(batch, records):
                        results[item.sample_id] = record
                        cache.put(group, record_key(fingerprint, item), record, fingerprint)
                        if item.sample_id in raised:
                            errors[item.sample_id] = record.error
                    bar.update(len(batch))
            fail_fast(group, scorer.device, tried, errors)
            provenance.update(cached=len(items) - len(todo), scored=len(todo), pooled=pooled,
                              seconds=round(time.perf_counter() - started, 3))
            return provenance, results
        finally:
            scorer.release()  # free (GPU) memory before the next scorer loads


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


def run_evaluation(settings: RunSettings, run_dir: Path, source_run: Path, samples, header: dict) -> dict:
    """Score the generation run ``source_run`` into ``run_dir``; returns metrics.json's content."""
    import torch

    evaluation = settings.evaluation
    started = time.time()
    device, warning = resolve_device(evaluation.device)  # a device torch cannot see fails before anything loads
    requested, source = load_requested(source_run, samples)
    if evaluation.cpu_threads:
        torch.set_num_threads(evaluation.cpu_threads)
    if device == "cpu":
        warn_if_slow(torch.get_num_threads())  # thread settings that would slow scoring
    items = [r.item for r in requested if r.item is not None]
    cache = MetricCache(run_dir, evaluation.cache_dir)
    hash_cache = HashCache(settings.hash_cache)
    rows = {r.sample.sample_id: _row(r) for r in requested}
    scorers = {}
    backend = evaluation.scorer_options["whisper"]["backend"]
    workers = pool_workers(evaluation.cpu_workers, len(items), available_cores())
    pool = CpuPool(workers, settings.hash_cache) if workers else None
    overlap.gpu_foreground(device.startswith("cuda"))
    pin_blas_threads()  # before any scorer thread starts (evaluate/threads.py)

    def beside(group: str) -> bool:  # scored beside the others: one-thread groups, and the pooled ones
        cls = scorer_class(group, backend)
        return cls.runs_beside_others or (pool is not None and cls.cpu_bound)

    def shares(group: str) -> bool:  # lets the background run beside it (GPU groups leave the cores)
        return (device.startswith("cuda") and scorer_class(group, backend).uses_gpu) or shares_cores(group, backend)

    try:
        for group, (provenance, results) in run_groups(
                groups_for(evaluation.metrics), beside,
                lambda g, hc: run_group(g, settings, device, items, cache, hc, pool), hash_cache, settings.hash_cache,
                shares):
            scorers[group] = provenance
            for sample_id, record in results.items():
                if record.ok:
                    rows[sample_id].update(record.values)
                else:
                    rows[sample_id]["errors"].append(f"{group}: {record.error}")
    except ScorerGroupFailed as exc:  # the run failed; scored records are cached, so running again resumes
        write_json(run_dir / "scoring_manifest.json", {
            "schema": "clonebench.scoring/v1", **header, "status": "failed", "reasons": [str(exc)],
            "source_run": source, "device": device, "device_warning": warning,
            "metric_groups": {m: METRIC_GROUPS[m] for m in evaluation.metrics}, "started_at": started,
            "finished_at": time.time()})
        raise
    finally:
        hash_cache.close()
        if pool is not None:
            pool.close()
    ordered = [rows[r.sample.sample_id] for r in requested]
    reasons = []
    for row in ordered:
        missing = [m for m in evaluation.metrics if row.get(m) is None]
        if missing:
            reasons.append(f"{row['pair_id']}: no {missing}: {'; '.join(row['errors']) or 'not scored'}")
        row["errors"] = " | ".join(row["errors"])
    status = "complete" if not reasons else "partial"
    summary = summarise(ordered, list(evaluation.metrics), len(requested), evaluation.bootstrap_resamples,
                        evaluation.confidence, evaluation.bootstrap_seed)
    metrics = {"status": status, "reasons": reasons, "n_requested": len(requested),
               "metrics": summary, "scorer_fingerprints": {g: p["fingerprint"] for g, p in scorers.items()},
               "input_fingerprint": source["fingerprints"]["input"], "device": device}
    write_csv(run_dir / "generation_sample_metrics.csv", ordered)
    write_json(run_dir / "metrics.json", metrics)
    write_json(run_dir / "scoring_manifest.json", {
        "schema": "clonebench.scoring/v1", **header, "status": status, "reasons": reasons,
        "source_run": source, "device": device, "device_warning": warning,
        "metric_groups": {m: METRIC_GROUPS[m] for m in evaluation.metrics}, "scorers": scorers,
        "cache": {"hits": cache.hits, "misses": cache.misses, "shared_dir": str(evaluation.cache_dir)},
        "cpu_pool_workers": workers, "started_at": started, "finished_at": time.time()})
    log.info("evaluation %s: %s", status, {m: v["mean"] for m, v in summary.items()})
    return metrics
