"""Load shapes of a serving run: one request at a time (cold start, warm-up), closed loop (N requests kept in
flight: what a fixed pool of callers sees) and open loop (Poisson arrivals at a rate, whatever is in flight: what
a public endpoint sees, queueing included)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import numpy as np

from clonebench.serving.client import RequestRecord

# (sample id, phase, seconds since the level started, planned arrival) -> the filled record
Send = Callable[[str, str, float, float | None], Awaitable[RequestRecord]]


async def one_at_a_time(ids: list[str], phase: str, send: Send) -> list[RequestRecord]:
    origin = time.perf_counter()
    return [await send(i, phase, time.perf_counter() - origin, None) for i in ids]


def jobs(ids: list[str], ramp: int, measured: int) -> list[tuple[str, str]]:
    """(sample id, phase) in sending order: the ramp takes pairs from the end of the list, the measured requests
    start at its first pair, so every level measures the same pairs (quality under load compares them)."""
    return [(ids[(-1 - k) % len(ids)], "ramp") for k in range(ramp)] + \
        [(ids[k % len(ids)], "measured") for k in range(measured)]


async def closed_loop(ids: list[str], in_flight: int, measured: int, send: Send) -> list[RequestRecord]:
    """``in_flight`` workers, each sending its next request when its last one ended; the first request of each
    worker is the level's ramp (it starts beside fewer than ``in_flight`` others) and is left out of the summary."""
    queue = iter(jobs(ids, in_flight, measured))
    origin = time.perf_counter()
    records: list[RequestRecord] = []

    async def worker() -> None:
        for sample_id, phase in queue:
            records.append(await send(sample_id, phase, time.perf_counter() - origin, None))
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return records


def poisson_arrivals(rate: float, count: int, seed: int) -> list[float]:
    """Arrival times (seconds) of a Poisson process at ``rate`` per second: exponential gaps, seeded."""
    gaps = np.random.default_rng(seed).exponential(1.0 / rate, size=count)
    return [float(t) for t in np.cumsum(gaps) - gaps[0]]  # the first arrival at 0


async def open_loop(ids: list[str], rate: float, ramp: int, measured: int, seed: int, send: Send) -> list[RequestRecord]:
    """Requests sent at Poisson arrival times whatever is still in flight; the first ``ramp`` are left out."""
    arrivals = poisson_arrivals(rate, ramp + measured, seed)
    origin = time.perf_counter()

    async def at(planned: float, sample_id: str, phase: str) -> RequestRecord:
        await asyncio.sleep(max(0.0, planned - (time.perf_counter() - origin)))
        return await send(sample_id, phase, time.perf_counter() - origin, planned)
    return list(await asyncio.gather(*(at(t, sample_id, phase)
                                       for t, (sample_id, phase) in zip(arrivals, jobs(ids, ramp, measured)))))
