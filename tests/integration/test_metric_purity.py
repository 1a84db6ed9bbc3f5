"""A metric is a pure function of (scorer protocol, target file, generated file, text, language).

The same real set (LibriVox clips and their resampled / 24-bit noisy / float / stereo copies) is scored through
the evaluate phase's ``run_group_jobs`` (real models, real metric cache) with batch size 1, 2 and 8, in shuffled
order, with a half-warm cache and as two shards merged: every value of every scorer must be identical.

Each scorer group is loaded once per batch size (``run_group_jobs`` scores several jobs with one loaded scorer,
as the evaluate phase does for a suite's tasks), and the half-warm run doubles as the second shard: its shared
cache holds shard 0 (scored on its own, in a batch of 8 with no other neighbours), so what it scores is exactly
shard 1, in a batch of its own. The cache hits and misses of that run are asserted, so it cannot silently turn
into a fully cold or fully warm run.
"""

from __future__ import annotations

import hashlib
import random
from types import SimpleNamespace

import pytest

from clonebench.core.hashing import HashCache
from clonebench.data.selection import shard_members
from clonebench.evaluate.execution.cache import MetricCache
from clonebench.evaluate.scoring import run_group_jobs
from tests.conftest import score_item

GROUPS = ("ecapa", "whisper", "dnsmos", "stoi", "mcd", "failures")
OPTIONS = {
    "ecapa": {"threshold": 0.25, "local_dir": None, "allow_hub": False},
    "whisper": {"backend": "faster_whisper", "model": "tiny.en", "local_path": None, "sha256": None,
                "normalisation": "ascii_punctuation_removed_v2", "compute_type": "auto", "allow_hub": False},
    "dnsmos": {"local_dir": None}, "stoi": {}, "mcd": {}, "failures": {},
}


@pytest.fixture(scope="module")
def items(speech_variants):
    """8 pairs covering every kind of copy, generated and target at different rates/formats."""
    chosen = speech_variants[:5] + speech_variants[-3:]
    out = []
    for k, generated in enumerate(chosen):
        target = speech_variants[(speech_variants.index(generated) + 6) % len(speech_variants)]
        sample_id = hashlib.sha256(f"purity-{k}".encode()).hexdigest()
        out.append(score_item(generated["path"], target["path"], text=generated["text"], sample_id=sample_id))
    return out


def score(jobs: list[tuple], batch_size: int) -> list[tuple[dict, dict]]:
    """Per job ``(items, run_dir, shared)``, in order: ({group: {sample_id: values}} as the evaluate phase
    produces them, {group: (cache hits, scored)}); each group's scorer loaded once for all the jobs."""
    settings = SimpleNamespace(evaluation=SimpleNamespace(scorer_options=OPTIONS, batch_size=batch_size))
    caches = [MetricCache(run_dir, shared) for _, run_dir, shared in jobs]
    out = [({}, {}) for _ in jobs]
    for group in GROUPS:
        done = run_group_jobs(group, settings, "cpu", [(items, cache) for (items, _, _), cache in zip(jobs, caches)],
                              HashCache(None))
        for (values, counts), (provenance, results) in zip(out, done):
            assert all(r.ok for r in results.values()), {k: r.error for k, r in results.items() if not r.ok}
            values[group] = {k: r.values for k, r in results.items()}
            counts[group] = (provenance["cached"], provenance["scored"])
    return out


def test_values_do_not_depend_on_batch_order_cache_or_shards(items, tmp_path):
    [(reference, _)] = score([(items, tmp_path / "b1", None)], 1)
    [(two, _)] = score([(items, tmp_path / "b2", None)], 2)
    assert two == reference
    shuffled = list(items)
    random.Random(3).shuffle(shuffled)
    shards = [shard_members([i.sample_id for i in items], 2, index) for index in range(2)]
    first, second = ([i for i in items if i.sample_id in members] for members in shards)
    assert first and second, "both shards must hold pairs"
    # in one load: the shuffled batch of 8; shard 0 on its own into a shared cache; then the shuffled set again
    # with that half-warm shared cache, which scores shard 1 (its misses) in a batch of its own
    shared = tmp_path / "shared"
    (eight, _), (shard0, _), (warm, counts) = score(
        [(shuffled, tmp_path / "b8", None), (first, tmp_path / "shard0", shared),
         (shuffled[::-1], tmp_path / "half", shared)], 8)
    assert eight == reference
    assert counts == {group: (len(first), len(second)) for group in GROUPS}, counts  # half warm, half scored
    assert warm == reference
    # two shards, each scored on its own, merged
    merged = {group: {**shard0[group], **{k: v for k, v in warm[group].items() if k in shards[1]}}
              for group in GROUPS}
    assert merged == reference
