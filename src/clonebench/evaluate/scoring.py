"""One scorer group over items: load the scorer once, reuse trusted cache records, score the rest in batches (in
this process or in the CPU pool), stop the run when every item fails the same way; its provenance block.

The run-level orchestration (several runs, the groups' schedule, outputs) is ``evaluate/phase.py``."""

from __future__ import annotations

import logging
import time
from typing import Any

from tqdm import tqdm

from clonebench.core.errors import ClonebenchError
from clonebench.core.hashing import HashCache
from clonebench.core.provenance import package_versions
from clonebench.data.identity import digest
from clonebench.evaluate.execution import overlap
from clonebench.evaluate.execution.cache import MetricCache
from clonebench.evaluate.execution.chunk import score_chunk
from clonebench.evaluate.execution.cpu_pool import CpuPool
from clonebench.evaluate.execution.device import execution
from clonebench.evaluate.execution.precision import policy
from clonebench.evaluate.execution.progress import ScoringProgress
from clonebench.evaluate.execution.threads import pin_blas_threads
from clonebench.evaluate.protocols.assets import AssetError
from clonebench.evaluate.protocols.base import ScoreItem, Scorer, ScoreRecord
from clonebench.evaluate.protocols.registry import scorer_class
from clonebench.evaluate.protocols.source_digest import source_digest

log = logging.getLogger(__name__)


class ScorerGroupFailed(ClonebenchError):
    """Every item a scorer group tried failed with one and the same error: the cause is not in the audio."""


def scorer_provenance(scorer: Scorer, batch_size: int, threads: int | None = None) -> dict[str, Any]:
    """Everything that decides a scorer's numbers; its digest is part of every cache key.

    The batch size is recorded but not fingerprinted: every scorer's value for a pair is independent of the
    batch it is scored in (tests/integration/test_metric_purity.py), so records scored with any batch size
    are interchangeable. Device, torch/CUDA versions, precision (in the protocol, and the GPU's flags) stay in
    the fingerprint, and the CPU thread count ``threads`` where the numbers depend on it (evaluate/execution/device.py)."""
    sources = {str(p.name): source_digest(p) for p in scorer.source_files()}
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
    """The CPU thread count that enters the fingerprint: the one whose bits the numbers are, for a scorer on a CPU
    whose numbers depend on it (one in the CPU pool; ``Scorer.computing_threads`` of the loaded scorer otherwise:
    ECAPA's exact path computes the two-thread bits on one thread); None on a GPU and for thread-independent ones."""
    if scorer.device != "cpu" or not scorer.threads_change_numbers:
        return None
    return CpuPool.threads if pooled else scorer.computing_threads(torch_threads)


def make_scorer(group: str, settings, device: str, hash_cache: HashCache) -> Scorer:
    """The scorer of ``group`` as the run's settings configure it (not loaded yet)."""
    evaluation = settings.evaluation
    cls = scorer_class(group, evaluation.scorer_options["whisper"]["backend"])
    return cls(evaluation.scorer_options[group], device if cls.uses_gpu else "cpu", hash_cache)


def _in_process(scorer: Scorer, batches: list[list[ScoreItem]]):
    for batch in batches:
        overlap.check_stop()  # the other thread's groups failed: stop here
        yield score_chunk(scorer, batch)


def score_items(scorer: Scorer, fingerprint: str, items: list[ScoreItem], cache: MetricCache | None,
                batch_size: int, progress: ScoringProgress | None = None, pool: CpuPool | None = None,
                options: dict | None = None, backend: str | None = None) -> tuple[dict[str, ScoreRecord], int]:
    """Records of ``items`` by sample id (trusted cache hits first, the rest scored in batches, by ``pool`` when
    given) and the number of hits. Damaged cache records are misses, logged once per group with a count per
    reason; a group whose every scored item failed with one error raises ScorerGroupFailed."""
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
    if pool is None:
        scorer.prepare(todo)
    size = pool.chunk_size(len(todo), batch_size) if pool is not None else batch_size
    batches = [todo[k:k + size] for k in range(0, len(todo), size)]
    scored = (pool.score(group, backend, options, batches, overlap.spare_cores) if pool is not None
              else _in_process(scorer, batches))
    tried, errors = 0, {}
    with tqdm(total=len(items), initial=len(items) - len(todo), desc=f"score {group}", unit="wav") as bar:
        for batch, (records, raised, usable) in zip(batches, scored):
            tried += usable
            for item, record in zip(batch, records):
                results[item.sample_id] = record
                if cache is not None:
                    cache.store(group, fingerprint, item, record, scorer.metrics)
                if item.sample_id in raised:
                    errors[item.sample_id] = record.error
            if progress is not None:
                progress.scored(group, len(batch))  # after the batch's records are in the cache
            bar.update(len(batch))
    for line in cache.report(group, damaged=False) if cache is not None else []:
        log.warning("%s", line)
    fail_fast(group, scorer.device, tried, errors)
    if progress is not None:
        progress.done(group)
    return results, len(items) - len(todo)


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


def run_group_jobs(group: str, settings, device: str, jobs: list[tuple], hash_cache: HashCache,
                   pool: CpuPool | None = None) -> list[tuple[dict, dict[str, ScoreRecord]]]:
    """Load ``group``'s scorer once and score every job's items with it: (provenance, records) per job.
    A job is ``(items, cache)`` or ``(items, cache, progress)``. A CPU-bound group goes to ``pool`` when given."""
    import torch

    evaluation = settings.evaluation
    pin_blas_threads()  # features computed with numpy's BLAS give the same bits on every host
    backend = evaluation.scorer_options["whisper"]["backend"]
    scorer = make_scorer(group, settings, device, hash_cache)
    pooled = pool is not None and type(scorer).cpu_bound
    started = time.perf_counter()
    with policy(scorer.device):  # IEEE float32 on a GPU (evaluate/execution/precision.py)
        try:
            scorer.load()
        except AssetError as exc:
            scorer.release()
            if getattr(type(scorer), "verified", True):
                raise
            return [not_run(scorer, exc, items, *rest) for items, cache, *rest in jobs]
        try:
            threads = fingerprint_threads(scorer, pooled, torch.get_num_threads())  # loaded: its kernels known
            provenance = scorer_provenance(scorer, evaluation.batch_size, threads)
            torch.manual_seed(0)
            out = []
            for items, cache, *rest in jobs:
                results, hits = score_items(scorer, provenance["fingerprint"], items, cache, evaluation.batch_size,
                                            rest[0] if rest else None, pool if pooled else None,
                                            evaluation.scorer_options[group], backend)
                out.append(({**provenance, "cached": hits, "scored": len(items) - hits, "pooled": pooled}, results))
            seconds = round(time.perf_counter() - started, 3)
            for job_provenance, _ in out:
                job_provenance["seconds"] = seconds
            return out
        finally:
            scorer.release()  # free (GPU) memory before the next scorer loads


def run_group(group: str, settings, device: str, items: list[ScoreItem], cache: MetricCache,
              hash_cache: HashCache, pool: CpuPool | None = None,
              progress: ScoringProgress | None = None) -> tuple[dict, dict[str, ScoreRecord]]:
    """Score ``items`` with ``group``'s scorer (trusted cached records reused)."""
    return run_group_jobs(group, settings, device, [(items, cache, progress)], hash_cache, pool)[0]
