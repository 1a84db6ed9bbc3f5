"""Re-send a run's first requests and report which outputs are byte-identical to the saved audio.

The requests are rebuilt from the run's own config and inputs (their bytes must match the journaled request
sha256) and sent to the run's endpoint (or --endpoint). A cold first request to a fresh Fish server is known
to differ from warm ones, so each can be sent --repeats times. Nothing is written into the run. A run without
a seed the server honoured (s2.cpp, an unseeded run, or seed_honoured false from the determinism probe) is
reported as unseeded: its outputs are not expected to be byte-identical.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from omegaconf import OmegaConf

from clonebench.core.errors import ClonebenchError
from clonebench.core.hashing import sha256_bytes
from clonebench.generate.journal import (
    JOURNAL_NAME,
    read_events,
    read_record,
    record_problem,
)
from clonebench.generate.recorder import MANIFEST_NAME
from clonebench.report.tables import seed_reason


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
            try:
                for _ in range(repeats):
                    body, _, _ = await send(http, request, policy, lambda a: None, lambda a: None)
                    outputs.append(sha256_bytes(body))
            finally:
                adversary.release()  # e.g. a reference staged in a server-side share (staged again if needed)
            report.append({"pair_id": sample.pair_id, "sample_id": sample.sample_id, "original_sha256": outcome.audio_sha256,
                           "request_identical": request.sha256 == journaled.get(sample.sample_id),
                           "repeat_sha256": outputs,
                           "identical_to_original": [o == outcome.audio_sha256 for o in outputs]})
    return report


def repeat_run(run_dir: Path, count: int = 3, repeats: int = 1, endpoint: str | None = None) -> dict:
    """Re-send the first ``count`` generated samples of ``run_dir`` ``repeats`` times each; the report (nothing is
    written into the run)."""
    from clonebench.config.settings import read_settings
    from clonebench.core.records import SampleStatus
    from clonebench.data.identity import input_fingerprint
    from clonebench.data.selection import load_samples
    from clonebench.generate.journal import final_outcomes

    manifest_path = run_dir / MANIFEST_NAME
    if not manifest_path.is_file():
        raise ClonebenchError(f"{run_dir}: no {MANIFEST_NAME}")
    fix = "restore the run's run_manifest.json (clonebench writes it) or re-run"
    manifest = read_record(manifest_path, ClonebenchError, fix)
    problem = record_problem(manifest, {"config": (dict,), "fingerprints": (dict,), "fingerprints.input": (str,),
                                        "seed_policy": (str,)})
    if problem or not isinstance(manifest.get("config"), dict) or manifest.get("fingerprints") is None:
        raise ClonebenchError(f"run record {manifest_path}: {problem or 'no config or fingerprints'}; {fix}")
    cfg = OmegaConf.create(manifest["config"])
    if endpoint:
        cfg.adversary.endpoint_url = endpoint
    settings = read_settings(cfg, f"{manifest_path} (config)")
    samples = load_samples(settings)
    if input_fingerprint(samples) != manifest["fingerprints"]["input"]:
        raise ClonebenchError(f"{run_dir}: the run's inputs changed since it ran (input fingerprint differs)")
    events = list(read_events(run_dir / JOURNAL_NAME))
    outcomes = final_outcomes(events)
    chosen = [(s, outcomes[s.sample_id]) for s in samples
              if s.sample_id in outcomes and outcomes[s.sample_id].status == SampleStatus.GENERATED][:count]
    journaled = {e["sample_id"]: e["request_sha256"] for e in events
                 if e["event"] == "attempt_start" and e.get("purpose") == "sample"}
    report = asyncio.run(_resend(settings, chosen, journaled, repeats))
    identical = sum(all(r["identical_to_original"]) for r in report)
    seeded = manifest.get("seed_policy") not in (None, "not_supported", "unseeded") \
        and manifest.get("seed") is not None and manifest.get("seed_honoured") is not False \
        and manifest.get("seeded") is not False
    return {"run_dir": str(run_dir), "samples": len(report), "repeats": repeats, "seeded": seeded,
            "seed_honoured": manifest.get("seed_honoured"), "seed_policy": manifest.get("seed_policy"),
            "seed_handling": manifest.get("seed_handling"),
            **({} if seeded else {"unseeded_why": seed_reason(manifest.get("seed_policy"), manifest.get("seed_honoured"),
                                                              manifest.get("seed_handling"))}),
            "byte_identical": identical, "results": report}
