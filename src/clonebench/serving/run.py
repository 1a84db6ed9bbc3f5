"""A serving run: readiness, a cold request, warm-up, then every closed- and open-loop level; ``serving.json``
(each request's record, each level's summary, the capacity lines) and ``run_manifest.json`` (measure: stream, the
definitions) in the run directory. Generate-only: the audio is checked and timed, never scored."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx

from clonebench.adversary.bounded import bounded_client
from clonebench.adversary.endpoints import EndpointPool
from clonebench.adversary.registry import adversary_class
from clonebench.adversary.service_record import load_service_record
from clonebench.adversary.settings import ClientSettings
from clonebench.core.atomic import atomic_write_json
from clonebench.core.errors import ConfigError
from clonebench.core.records import Sample
from clonebench.core.redact import redact, redact_value
from clonebench.generate.journal import MANIFEST_NAME
from clonebench.generate.phase import api_key_headers
from clonebench.generate.readiness import check_reference_durations, wait_until_ready
from clonebench.generate.runner import synthesis_input
from clonebench.serving.client import RequestRecord, measure_request, streamed
from clonebench.serving.definitions import SERVING_DEFINITIONS
from clonebench.serving.settings import ServingSettings
from clonebench.serving.summary import capacity, level_summary
from clonebench.serving.sweep import closed_loop, one_at_a_time, open_loop
from clonebench.serving.under_load import UnderLoad

log = logging.getLogger(__name__)
RESULTS = "serving.json"


def run_serving(client: ClientSettings, params: dict[str, Any], serving: ServingSettings, samples: list[Sample],
                seed: int | None, run_dir: Path, header: dict) -> dict:
    """Run the sweep against ``client.endpoint_url``; returns what ``serving.json`` holds."""
    if len(client.endpoint_urls) > 1:
        raise ConfigError("adversary.measure=stream measures one server: set adversary.endpoint_urls=null and "
                          "adversary.endpoint_url to the server to measure")
    if not samples:
        raise ConfigError("adversary.measure=stream: no pairs selected (dataset.*)")
    adversary = adversary_class(client.protocol)(client, params)
    check_reference_durations(samples, adversary)
    adversary.check_samples(samples)
    adversary.use_service_record(load_service_record(client.service_record, client.protocol))
    run_dir.mkdir(parents=True, exist_ok=True)
    requests = {s.sample_id: adversary.prepare(synthesis_input(s)) for s in samples}
    ids = list(requests)
    run_seed, seed = seed, 0 if seed is None else seed  # seed: the bootstrap's and the arrivals' (0 when unseeded)
    manifest = {**header, "measure": "stream", "status": "running", "started_at": time.time(),
                "serving_definitions": SERVING_DEFINITIONS, "serving": asdict(serving),
                "streamed": streamed(next(iter(requests.values()))), "n_pairs": len(samples),
                "reference_check": {"status": "not run", "why": "a serving run times answers and never scores them; "
                                    "the reference gate belongs to the quality run of the same server"},
                "generation_provenance": {"protocol": adversary.protocol, "endpoint_url": redact(client.endpoint_url),
                                          "request": adversary.params}}
    atomic_write_json(run_dir / MANIFEST_NAME, manifest)
    out: dict[str, Any] = {"protocol": client.protocol, "streamed": manifest["streamed"], "levels": [],
                           # what each pair asks to say (quality under load: the WER of answers that differ)
                           "texts": {s.sample_id: {"text": s.row.target_text, "language": s.row.target_language}
                                     for s in samples}}

    compare = serving.quality_under_load and adversary.seeded(run_seed)
    manifest["quality_under_load"] = "compared with the answers sent alone" if compare else \
        "off (serving.quality_under_load=false)" if not serving.quality_under_load else \
        f"not compared: the run is not seeded ({adversary.seed_policy(run_seed)}, seed handling: " + \
        ("none, the server takes no seed" if not adversary.accepts_seed else "the server ignores it"
         if adversary.seed_ignored else "no run seed") + "), so its answers differ whatever the load"
    atomic_write_json(run_dir / MANIFEST_NAME, manifest)
    under_load = UnderLoad(run_dir) if compare else None
    current = {"alone": True, "name": "alone"}

    async def send(sample_id: str, phase: str, started_s: float, planned: float | None) -> RequestRecord:
        record = RequestRecord(sample_id, phase, started_s, planned)
        await measure_request(http, requests[sample_id], record, client.timeout, serving.prebuffer_s,
                              keep_body=under_load is not None)
        if under_load is not None:
            under_load.note(record, current["alone"], current["name"])
        return record

    async def main() -> None:
        nonlocal http
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=max(serving.levels) + 4)
        timeout = httpx.Timeout(client.timeout, connect=min(client.timeout, 10.0))
        async with bounded_client(client.max_response_bytes, timeout=timeout, limits=limits,
                                  headers=api_key_headers(client.api_key_env)) as http:
            pool = EndpointPool([client.endpoint_url], client.endpoint_eject_after)
            out["readiness"] = await wait_until_ready(adversary, http, pool, client.ready_timeout)
            out["cold"] = (await one_at_a_time(ids[:1], "cold", send))[0].as_dict()
            warm = [ids[i % len(ids)] for i in range(1, 1 + serving.warmup_requests)]
            out["warmup"] = [r.as_dict() for r in await one_at_a_time(warm, "warmup", send)]
            plans = [("closed", n) for n in serving.levels] if serving.mode in ("closed", "both") else []
            plans += [("open", r) for r in serving.rates] if serving.mode in ("open", "both") else []
            for index, (mode, level) in enumerate(plans):
                log.info("serving level: %s loop, %g %s", mode, level, "in flight" if mode == "closed" else "per s")
                current.update(alone=(mode, level) == ("closed", 1), name=f"{mode}-{level:g}")
                if mode == "closed":
                    records = await closed_loop(ids, level, serving.requests_per_level, send)
                else:
                    records = await open_loop(ids, level, serving.open_loop_ramp_requests,
                                              serving.requests_per_level, seed + index, send)
                rows = [r.as_dict() for r in records]
                summary = level_summary(rows, serving, seed)
                if under_load is not None:
                    summary["outputs_vs_alone"] = under_load.summary(rows)
                out["levels"].append({"mode": mode, "level": level, "summary": summary, "records": rows})
                atomic_write_json(run_dir / RESULTS, redact_value(out))
    http = None
    try:
        asyncio.run(main())
        out["capacity"] = [capacity(out["levels"], serving, m) for m in ("closed", "open")
                           if any(x["mode"] == m for x in out["levels"])]
        atomic_write_json(run_dir / RESULTS, redact_value(out))
        manifest["status"] = "complete"
    except BaseException as exc:
        manifest.update(status="failed", reason=redact(f"{type(exc).__name__}: {exc}"))
        raise
    finally:
        out["released"] = adversary.release()
        manifest["finished_at"] = time.time()
        atomic_write_json(run_dir / MANIFEST_NAME, redact_value(manifest))
    return out
