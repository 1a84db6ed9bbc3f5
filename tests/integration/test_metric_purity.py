"""A metric is a pure function of (scorer protocol, target file, generated file, text, language).

The same real set (LibriVox clips and their resampled / 24-bit noisy / float / stereo copies) is scored through
the evaluate phase's ``run_group`` (real models, real metric cache) with batch size 1, 2 and 8, in shuffled
order, with a half-warm cache and as two shards merged: every value of every scorer must be identical.
"""

from __future__ import annotations

import hashlib
import random
from types import SimpleNamespace

import pytest

from clonebench.core.hashing import HashCache
from clonebench.data.selection import shard_members
from clonebench.evaluate.execution.cache import MetricCache
from clonebench.evaluate.scoring import run_group
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


def score(items, batch_size: int, run_dir, shared=None) -> dict:
    """{group: {sample_id: values}} as the evaluate phase produces them."""
    settings = SimpleNamespace(evaluation=SimpleNamespace(scorer_options=OPTIONS, batch_size=batch_size))
    cache = MetricCache(run_dir, shared)
    out = {}
    for group in GROUPS:
        _, results = run_group(group, settings, "cpu", items, cache, HashCache(None))
        assert all(r.ok for r in results.values()), {k: r.error for k, r in results.items() if not r.ok}
        out[group] = {k: r.values for k, r in results.items()}
    return out


def test_values_do_not_depend_on_batch_order_cache_or_shards(items, tmp_path):
    reference = score(items, 1, tmp_path / "b1")
    assert score(items, 2, tmp_path / "b2") == reference
    shuffled = list(items)
    random.Random(3).shuffle(shuffled)
    assert score(shuffled, 8, tmp_path / "b8") == reference
    # half-warm: a shared cache holds half the pairs (scored in a batch of 8 with other neighbours)
    shared = tmp_path / "shared"
    score(items[::2], 8, tmp_path / "warm", shared)
    warm = score(shuffled, 2, tmp_path / "half", shared)
    assert warm == reference
    # two shards, each scored on its own, merged
    merged = {group: {} for group in GROUPS}
    for index in range(2):
        members = shard_members([i.sample_id for i in items], 2, index)
        part = [i for i in items if i.sample_id in members]
        assert part, "both shards must hold pairs"
        for group, values in score(part, 8, tmp_path / f"shard{index}").items():
            merged[group].update(values)
    assert merged == reference
