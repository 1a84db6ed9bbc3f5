"""The evaluate phase: saved WAVs -> one scorer group at a time (cached, batched) -> CSV, metrics, provenance."""

from __future__ import annotations

import hashlib
import logging
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from clonebench.data.identity import digest
from clonebench.evaluate.aggregate import summarise
from clonebench.evaluate.base import Scorer, ScoreItem, ScoreRecord
from clonebench.evaluate.cache import MetricCache, record_key
from clonebench.evaluate.device import execution, resolve_device
from clonebench.evaluate.inputs import Requested, duration, load_requested
from clonebench.evaluate.outputs import write_csv, write_json
from clonebench.evaluate.overlap import run_groups, shares_cores
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


def run_group(group: str, settings, device: str, items: list[ScoreItem], cache: MetricCache,
              hash_cache: HashCache) -> tuple[dict, dict[str, ScoreRecord]]:
    import torch

    evaluation = settings.evaluation
    cls = scorer_class(group, evaluation.scorer_options["whisper"]["backend"])
    scorer = cls(evaluation.scorer_options[group], device if cls.uses_gpu else "cpu", hash_cache)
    started = time.perf_counter()
    scorer.load()
    try:
        provenance = scorer_provenance(scorer, evaluation.batch_size)
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
        with tqdm(total=len(items), initial=len(items) - len(todo), desc=f"score {group}", unit="wav") as bar:
            for start in range(0, len(todo), evaluation.batch_size):
                batch = todo[start:start + evaluation.batch_size]
                for item, record in zip(batch, _score(scorer, batch)):
                    results[item.sample_id] = record
                    cache.put(group, record_key(fingerprint, item), record, fingerprint)
                bar.update(len(batch))
        provenance.update(cached=len(items) - len(todo), scored=len(todo),
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
    requested, source = load_requested(source_run, samples)
    if evaluation.cpu_threads:
        torch.set_num_threads(evaluation.cpu_threads)
    warn_if_slow(torch.get_num_threads())  # thread settings that would slow scoring
    device, warning = resolve_device(evaluation.device)
    items = [r.item for r in requested if r.item is not None]
    cache = MetricCache(run_dir, evaluation.cache_dir)
    hash_cache = HashCache(settings.hash_cache)
    rows = {r.sample.sample_id: _row(r) for r in requested}
    scorers = {}
    try:
        # single-threaded scorer groups run beside the others (evaluate/overlap.py)
        backend = evaluation.scorer_options["whisper"]["backend"]
        for group, (provenance, results) in run_groups(
                groups_for(evaluation.metrics), lambda g: scorer_class(g, backend).runs_beside_others,
                lambda g, hc: run_group(g, settings, device, items, cache, hc), hash_cache, settings.hash_cache,
                lambda g: shares_cores(g, backend)):
            scorers[group] = provenance
            for sample_id, record in results.items():
                if record.ok:
                    rows[sample_id].update(record.values)
                else:
                    rows[sample_id]["errors"].append(f"{group}: {record.error}")
    finally:
        hash_cache.close()
    ordered = [rows[r.sample.sample_id] for r in requested]
    reasons = []
    for row in ordered:
        missing = [m for m in evaluation.metrics if row.get(m) is None]
        if missing:
            reasons.append(f"{row['pair_id']}: no {missing}: {'; '.join(row['errors']) or 'not scored'}")
        row["errors"] = " | ".join(row["errors"])
    status = "complete" if not reasons else "partial"
    summary = summarise(ordered, list(evaluation.metrics), len(requested), evaluation.bootstrap_resamples,
                        evaluation.confidence, evaluation.bootstrap_seed, evaluation.seed)
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
        "started_at": started, "finished_at": time.time()})
    log.info("evaluation %s: %s", status, {m: v["mean"] for m, v in summary.items()})
    return metrics
