"""The CPU pool (evaluate/execution/cpu_pool.py): MCD, DNSMOS and STOI scored by worker processes give the values they give in
this process, bit for bit, on real speech in every format; MCD's and DNSMOS's fingerprints do not depend on
where they ran (their thread counts are fixed), STOI's records the one thread it computes with in a worker (and
equals this process's STOI at one thread).
Sizing follows the host: one worker beside CPU groups, all but two cores beside GPU groups."""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

import pytest

from clonebench.core.hashing import HashCache
from clonebench.evaluate.execution import overlap
from clonebench.evaluate.execution.cache import MetricCache
from clonebench.evaluate.execution.cpu_pool import POOL_MIN_CORES, POOL_MIN_ITEMS, CpuPool, pool_workers
from clonebench.evaluate.protocols.registry import scorer_class
from clonebench.evaluate.scoring import run_group
from tests.conftest import score_item

GROUPS = ("mcd", "dnsmos", "stoi")
OPTIONS = {"mcd": {}, "dnsmos": {"local_dir": None}, "stoi": {}, "whisper": {"backend": "faster_whisper"}}


def test_pool_size_follows_the_setting_and_the_host(monkeypatch):
    assert pool_workers(None, POOL_MIN_ITEMS - 1, 16) == 0  # a small run: starting workers costs more than it saves
    assert pool_workers(None, POOL_MIN_ITEMS, 16) == 16 and pool_workers(None, 500, 1) == 0
    assert pool_workers(None, 500, POOL_MIN_CORES - 1) == 0 and pool_workers(None, 500, POOL_MIN_CORES) == POOL_MIN_CORES
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
def test_pooled_values_equal_in_process_values(pairs, tmp_path, record_property):
    """Pooled records equal in-process ones with the same fingerprint, bit for bit. MCD's and DNSMOS's fingerprints
    leave the thread count out, so they are compared with this process's own; STOI's carries it (one in a worker),
    so it is compared with this process at that count. Whether STOI at this process's default count gives other
    bits is a fact about the host's torch: recorded, not asserted."""
    import torch

    pool = CpuPool(2, None)
    try:
        for group in GROUPS:
            here, values = _score(group, pairs, tmp_path / f"{group}-here")
            pooled, pooled_values = _score(group, pairs, tmp_path / f"{group}-pool", pool, batch_size=3)
            assert pooled["pooled"] and not here["pooled"]
            if scorer_class(group, "faster_whisper").threads_change_numbers:  # STOI
                default = torch.get_num_threads()
                assert pooled["execution"]["cpu_threads"] == CpuPool.threads == 1
                assert here["execution"]["cpu_threads"] == default
                assert (here["fingerprint"] == pooled["fingerprint"]) == (default == CpuPool.threads)
                record_property(f"host_{group}_differs_{default}_vs_1_threads", values != pooled_values)
                print(f"host fact: {group} {'differs' if values != pooled_values else 'is equal'} between "
                      f"{default} and 1 torch thread(s)")
                torch.set_num_threads(CpuPool.threads)  # this process at the pool's count: the pool's fingerprint
                try:
                    here, values = _score(group, pairs, tmp_path / f"{group}-here-{CpuPool.threads}")
                finally:
                    torch.set_num_threads(default)
                assert here["execution"]["cpu_threads"] == CpuPool.threads
            else:  # thread-independent: interchangeable records
                assert "cpu_threads" not in here["execution"]
            assert pooled["fingerprint"] == here["fingerprint"], group
            assert pooled_values == values, group  # bit for bit, in every format, another chunking
    finally:
        pool.close()
