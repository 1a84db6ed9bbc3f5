"""The CPU pool (evaluate/cpu_pool.py): MCD, DNSMOS and STOI scored by worker processes give the values they give in
this process, bit for bit, on real speech in every format; MCD's and DNSMOS's fingerprints do not depend on
where they ran (their thread counts are fixed), STOI's records the one thread it computes with in a worker.
Sizing follows the host: one worker beside CPU groups, all but two cores beside GPU groups."""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

import pytest

from clonebench.evaluate import overlap
from clonebench.evaluate.cache import MetricCache
from clonebench.evaluate.cpu_pool import POOL_MIN_ITEMS, CpuPool, pool_workers
from clonebench.evaluate.scoring import run_group
from clonebench.core.hashing import HashCache

from tests.conftest import score_item

GROUPS = ("mcd", "dnsmos", "stoi")
OPTIONS = {"mcd": {}, "dnsmos": {"local_dir": None}, "stoi": {}, "whisper": {"backend": "faster_whisper"}}


def test_pool_size_follows_the_setting_and_the_host(monkeypatch):
    assert pool_workers(None, POOL_MIN_ITEMS - 1, 16) == 0  # a small run: starting workers costs more than it saves
    assert pool_workers(None, POOL_MIN_ITEMS, 16) == 16 and pool_workers(None, 500, 1) == 0
    assert pool_workers(0, 500, 16) == 0 and pool_workers(3, 1, 16) == 3
    monkeypatch.setattr(overlap.os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    monkeypatch.setattr(overlap, "_state", {"gpu_foreground": True, "in_worker": False})
    overlap._foreground_running.set()
    try:
        assert overlap.spare_cores() == 16 - overlap.GPU_FEEDER_CORES  # beside GPU groups: the cores they leave
        overlap.gpu_foreground(False)
        assert overlap.spare_cores() == 1  # beside CPU groups that share their cores: one
    finally:
        overlap._foreground_running.clear()
    assert overlap.spare_cores() == 16
    overlap.in_worker()
    assert overlap.spare_cores() == 1  # inside a worker the pool is the parallelism


@pytest.fixture(scope="module")
def pairs(speech_variants):
    out = []
    chosen = speech_variants[:5] + speech_variants[-3:]  # every format, generated and target at different rates
    for k, generated in enumerate(chosen):
        target = speech_variants[(speech_variants.index(generated) + 6) % len(speech_variants)]
        out.append(score_item(generated["path"], target["path"], text=generated["text"],
                              sample_id=hashlib.sha256(f"pool-{k}".encode()).hexdigest()))
    return out


def _score(group, items, run_dir, pool=None, batch_size=4):
    settings = SimpleNamespace(evaluation=SimpleNamespace(scorer_options=OPTIONS, batch_size=batch_size))
    provenance, records = run_group(group, settings, "cpu", items, MetricCache(run_dir, None), HashCache(None), pool)
    assert all(r.ok for r in records.values()), {k: r.error for k, r in records.items() if not r.ok}
    return provenance, {k: r.values for k, r in records.items()}


@pytest.mark.slow
def test_pooled_values_equal_in_process_values(pairs, tmp_path):
    pool = CpuPool(2, None)
    try:
        for group in GROUPS:
            here, values = _score(group, pairs, tmp_path / f"{group}-here")
            pooled, pooled_values = _score(group, pairs, tmp_path / f"{group}-pool", pool, batch_size=3)
            assert pooled["pooled"] and not here["pooled"]
            assert pooled_values == values, group  # bit for bit, in every format, another chunking
            if group == "stoi":
                assert pooled["execution"]["cpu_threads"] == 1
            else:  # thread-independent: interchangeable records
                assert pooled["fingerprint"] == here["fingerprint"] and "cpu_threads" not in here["execution"]
    finally:
        pool.close()
