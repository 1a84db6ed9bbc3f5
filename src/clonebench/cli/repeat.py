"""Re-send a run's first requests and report which outputs are byte-identical to the saved audio.

The requests are rebuilt from the run's own config and inputs (their bytes must match the journaled request
sha256) and sent to the run's endpoint (or --endpoint). A cold first request to a fresh Fish server is known
to differ from warm ones, so each can be sent --repeats times. Nothing is written into the run. A run without
a seed the server honoured (s2.cpp, an unseeded run, or seed_honoured false from the determinism probe) is
reported as unseeded: its outputs are not expected to be byte-identical.

    clonebench repeat RUN [--count 3] [--repeats 2] [--endpoint URL] [--output FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from omegaconf import OmegaConf

from clonebench.core.atomic import atomic_write_json
from clonebench.core.errors import ClonebenchError
from clonebench.generate.journal import JOURNAL_NAME, read_events
from clonebench.generate.recorder import MANIFEST_NAME
from clonebench.core.hashing import sha256_bytes


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--count", type=int, default=3, help="first K generated samples (default %(default)s)")
    parser.add_argument("--repeats", type=int, default=1, help="sends per sample (default %(default)s)")
    parser.add_argument("--endpoint", help="override the run's adversary.endpoint_url")
    parser.add_argument("--output", type=Path, help="write the report as JSON here")


async def _resend(settings, samples, journaled, repeats):
    from clonebench.adversary.bounded import bounded_client
    from clonebench.adversary.registry import adversary_class
    from clonebench.adversary.transport import RetryPolicy, send
    from clonebench.generate.phase import api_key_headers
    from clonebench.generate.readiness import probe_ready
    from clonebench.generate.runner import synthesis_input

    client = settings.client
    adversary = adversary_class(client.protocol)(client, settings.adversary_params)
    policy = RetryPolicy(client.request_attempts, client.retry_initial_delay, client.retry_max_delay,
                         deadline=client.timeout, busy_status=adversary.busy_status,
                         busy_max_wait=client.timeout)
    report = []
    async with bounded_client(client.max_response_bytes, timeout=client.timeout,
                              headers=api_key_headers(client.api_key_env)) as http:
        await probe_ready(adversary, http, client.endpoint_url)
        for sample, outcome in samples:
            request = adversary.prepare(synthesis_input(sample))
            outputs = []
            for _ in range(repeats):
                body, _, _ = await send(http, request, policy, lambda a: None, lambda a: None)
                outputs.append(sha256_bytes(body))
            report.append({"pair_id": sample.pair_id, "sample_id": sample.sample_id, "original_sha256": outcome.audio_sha256,
                           "request_identical": request.sha256 == journaled.get(sample.sample_id),
                           "repeat_sha256": outputs,
                           "identical_to_original": [o == outcome.audio_sha256 for o in outputs]})
    return report


def run(args: argparse.Namespace) -> int:
    from clonebench.data.identity import input_fingerprint
    from clonebench.generate.journal import final_outcomes
    from clonebench.data.selection import load_samples
    from clonebench.core.records import SampleStatus
    from clonebench.config.settings import read_settings

    manifest_path = args.run_dir / MANIFEST_NAME
    if not manifest_path.is_file():
        raise ClonebenchError(f"{args.run_dir}: no {MANIFEST_NAME}")
    manifest = json.loads(manifest_path.read_text())
    cfg = OmegaConf.create(manifest["config"])
    if args.endpoint:
        cfg.adversary.endpoint_url = args.endpoint
    settings = read_settings(cfg, f"{manifest_path} (config)")
    samples = load_samples(settings)
    if input_fingerprint(samples) != manifest["fingerprints"]["input"]:
        raise ClonebenchError(f"{args.run_dir}: the run's inputs changed since it ran (input fingerprint differs)")
    events = list(read_events(args.run_dir / JOURNAL_NAME))
    outcomes = final_outcomes(events)
    chosen = [(s, outcomes[s.sample_id]) for s in samples
              if s.sample_id in outcomes and outcomes[s.sample_id].status == SampleStatus.GENERATED][: args.count]
    journaled = {e["sample_id"]: e["request_sha256"] for e in events
                 if e["event"] == "attempt_start" and e.get("purpose") == "sample"}
    report = asyncio.run(_resend(settings, chosen, journaled, args.repeats))
    identical = sum(all(r["identical_to_original"]) for r in report)
    seeded = manifest.get("seed_policy") not in (None, "not_supported", "unseeded") \
        and manifest.get("seed") is not None and manifest.get("seed_honoured") is not False
    summary = {"run_dir": str(args.run_dir), "samples": len(report), "repeats": args.repeats, "seeded": seeded,
               "seed_honoured": manifest.get("seed_honoured"), "byte_identical": identical, "results": report}
    if args.output:
        atomic_write_json(args.output, summary)
    for r in report:
        flags = "".join("=" if same else "x" for same in r["identical_to_original"])
        print(f"{r['pair_id']:<28} request {'same' if r['request_identical'] else 'DIFFERENT'}  outputs vs saved: {flags}")
    print(f"{identical}/{len(report)} samples byte-identical on every repeat")
    if not seeded:
        why = "the server did not honour the seed (determinism probe)" if manifest.get("seed_honoured") is False \
            and manifest.get("seed_policy") not in ("not_supported", "unseeded") else "the run has no seed"
        print(f"no seed: {why}, so outputs are not expected to be byte-identical")
    return 0
