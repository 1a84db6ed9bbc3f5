"""The generate phase: pairs -> readiness -> reference gate -> journaled requests -> saved WAVs."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tqdm import tqdm

from clonebench.adversary.bounded import bounded_client
from clonebench.adversary.endpoints import EndpointPool
from clonebench.adversary.registry import ADVERSARIES, adversary_class
from clonebench.adversary.service_record import load_service_record
from clonebench.adversary.transport import AttemptFailed, RetryPolicy
from clonebench.core.atomic import DiskFullError, is_disk_full
from clonebench.core.errors import ClonebenchError, ConfigError, ManifestError
from clonebench.core.hashing import HashCache
from clonebench.core.provenance import service_provenance
from clonebench.core.records import RunStatus, Sample, SampleOutcome
from clonebench.core.redact import redact, redact_value
from clonebench.data.identity import digest, input_fingerprint
from clonebench.data.reference_length import check_reference_lengths
from clonebench.data.selection import load_samples
from clonebench.generate.readiness import check_reference_durations, wait_until_ready
from clonebench.generate.recorder import RunRecorder
from clonebench.generate.resume import ORIGIN_KEY, STAGED_EVENT, resume_chain, reusable_outcomes, staged_leftovers
from clonebench.generate.run_lock import RunLocks
from clonebench.generate.runner import generate_samples, probed_seed, reference_check
from clonebench.generate.settings import GenerationSettings

log = logging.getLogger(__name__)
TIMING_DEFINITIONS = {
    "ttfb_s": "client-side: from sending the request to the first byte of the streamed body (network, queueing, "
              "reference encoding and the first decoding steps)",
    "synthesis_time_s": "client-side: from sending the request to the last byte of the body (successful attempt)",
    "duration_s": "seconds of audio received (samples / 44100)",
    "rtf": "synthesis_time_s / duration_s (below 1: faster than real time)",
}


def api_key_headers(api_key_env: str | None) -> dict[str, str]:
    if not api_key_env:
        return {}
    key = os.environ.get(api_key_env)
    if not key:
        raise ConfigError(f"adversary.api_key_env={api_key_env}: the environment variable {api_key_env} is not set "
                          "or empty (export it, or set adversary.api_key_env=null)")
    return {"Authorization": f"Bearer {key}"}


def _timeout(settings: GenerationSettings) -> httpx.Timeout:
    total = settings.client.timeout
    return httpx.Timeout(total, connect=min(total, 10.0))


class _Terminated(Exception):
    pass


def _raise_terminated(signum, frame):  # pragma: no cover - exercised by the kill tests via subprocess
    raise _Terminated(f"signal {signum}")


@dataclass
class SharedGate:
    """One server's reference-check verdict, shared by the runs of one suite (each task is a run against the same
    server): the first run that sends requests runs the gate, the others record its verdict and where it ran."""

    result: dict | None = None
    run_dir: str | None = None


def run_generation(settings: GenerationSettings, run_dir: Path, header: dict[str, Any], samples: list[Sample] | None = None,
                   label: str | None = None, gate: SharedGate | None = None) -> RunRecorder:
    """Generate every selected sample into ``run_dir``; returns the recorder with the final status set.

    ``samples`` (already selected and verified, e.g. a suite task's) replace the dataset settings' pairs; ``label``
    names them in problems; ``gate`` shares the reference check between the runs of a suite."""
    client = settings.client
    cls = adversary_class(client.protocol)
    if client.measure == "ttfb" and not cls.supports_timing:
        timed = sorted(p for p in ADVERSARIES if adversary_class(p).supports_timing)
        raise ConfigError(f"adversary.measure=ttfb is implemented for the protocols whose answer streams "
                          f"({', '.join(timed)}), not {client.protocol}; use adversary.measure=quality")
    adversary = cls(client, settings.adversary_params)
    locks = RunLocks()
    run_dir.mkdir(parents=True, exist_ok=True)
    locks.own(run_dir)  # before anything is written: a second runner of this directory is refused
    origin = settings.vc.resume_from
    if origin is not None:  # recorded first, so that resuming from this run reaches back even if it fails
        if os.path.realpath(origin) == os.path.realpath(run_dir):
            locks.release()
            raise ConfigError(f"vc.resume_from={origin} is this run's own directory; a resume writes a new run")
        header = {**header, ORIGIN_KEY: os.path.realpath(origin)}
    try:
        recorder = RunRecorder(run_dir, header)
    except OSError as exc:
        locks.release()
        if is_disk_full(exc):
            raise DiskFullError(f"disk full while starting the run in {run_dir} ({exc.strerror}): free space on that "
                                "file system and start again") from exc
        raise
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    previous_usr2, interrupted = signal.getsignal(signal.SIGUSR2), False  # submitit's time-limit handler (SLURM)
    try:
        chain = []
        if origin is not None:
            chain = resume_chain(origin)
            for source in chain:
                locks.source(source, run_dir)
        try:
            samples = load_samples(settings) if samples is None else samples
            check_reference_lengths(samples, client.max_reference_seconds,
                                    label or str(settings.dataset.manifest_filename or settings.dataset.hf_path))
        except ManifestError as exc:
            recorder.record_input_failures(exc.bad_rows, exc.manifest)
            recorder.finish(RunStatus.FAILED, str(exc))
            raise
        recorder.set_samples(samples)
        reference_rule = check_reference_durations(samples, adversary)  # before any request
        adversary.check_samples(samples)  # e.g. languages the server accepts, a reference share (before any request)
        record = load_service_record(client.service_record, client.protocol)
        adversary.use_service_record(record)
        adversary.track_staging(lambda entry: recorder.journal.append(STAGED_EVENT, **entry), staged_leftovers(chain))
        cache = HashCache(settings.hash_cache)
        try:
            service = service_provenance(client.service_code_path, client.service_checkpoint_path,
                                         client.service_codec_checkpoint_path, cache)
        finally:
            cache.close()
        seed_policy = adversary.seed_policy(settings.seed)
        recorder.seeds_sent = seed_policy != "not_supported"
        fields = {**adversary.request_fingerprint_fields(), "seed": settings.seed if recorder.seeds_sent else None,
                  "seed_policy": seed_policy,
                  "service": {k: (v or {}).get("sha256") for k, v in service.items()},
                  "service_record": record["fingerprint"] if record else None}
        input_fp, generation_fp = input_fingerprint(samples), digest(fields)
        recorder.journal.append("fingerprints", input=input_fp, generation=generation_fp, generation_fields=fields)
        recorder.extra.update({
            "shard": {"index": settings.vc.shard_index, "count": settings.vc.shard_count},
            "measure": client.measure,
            **({"timing_definitions": TIMING_DEFINITIONS} if client.measure == "ttfb" else {}),
            "seed": settings.seed, "seed_policy": fields["seed_policy"],
            # None: not probed (the gate, adversary.reference_check, is off); False: the server ignores its seed (or
            # none is sent), and the run is treated as unseeded everywhere
            "seed_honoured": None if recorder.seeds_sent and settings.seed is not None and not adversary.seed_ignored
            else False,
            # false: outputs cannot be matched seed for seed (no seed field, a seed the server ignores, no run seed, or
            # the determinism probe found it ignored); repeat runs then give seed variance, not repeatability
            "seeded": adversary.seeded(settings.seed),
            "seed_handling": ("none (the server takes no seed)" if not adversary.accepts_seed else
                              "sent, ignored by the server" if adversary.seed_ignored else "sent"),
            "effective_sampling": adversary.effective_sampling(),
            "ignored_request_fields": sorted(adversary.ignored_fields),
            **({"reference_rule": reference_rule} if reference_rule else {}),
            "fingerprints": {"input": input_fp, "generation": generation_fp},
            "generation_fingerprint_fields": fields,
            "generation_provenance": {"protocol": adversary.protocol,
                                      "endpoint_urls": [redact(u) for u in client.endpoint_urls],
                                      "request": adversary.params, "seeded": adversary.seeded(settings.seed),
                                      **service,
                                      "service_record": redact_value(record) if record else None},
        })
        reused = {}
        if origin is not None:
            reused = reusable_outcomes(origin, samples, input_fp, generation_fp, fields, chain)
            recorder.extra["resumed_from"] = {"run_dir": str(origin), "reused": len(reused),
                                              "chain": [str(c) for c in chain]}
            for sample in samples:
                if sample.sample_id in reused:
                    found = reused[sample.sample_id]
                    # the resolved path (inside its run) replaces the journaled one for the link
                    source = SampleOutcome.from_dict({**found.outcome.as_dict(), "audio_path": str(found.path)})
                    recorder.reuse_audio(sample, source, found.run_dir)
            recorder.journal.sync()
        recorder.write_manifest()
        todo = [s for s in samples if s.sample_id not in reused]
        log.info("%d pairs selected, %d reused from an earlier run, %d to generate", len(samples), len(reused), len(todo))
        if todo:
            _generate(settings, adversary, samples, todo, recorder, gate)
        recorder.extra.update(adversary.release())  # e.g. staged references removed, and what was staged
        status = recorder.finish()
        log.info("generation %s: %s", status.value, recorder.counts())
        return recorder
    except (KeyboardInterrupt, _Terminated, SystemExit) as exc:  # SystemExit: submitit requeued the job
        # a second SIGTERM (a requeue's) must not cut the record short; nor may a repeated time-limit signal, now
        # or while the process ends: submitit would requeue the job again, or fail and leave a result that tells
        # the launcher this job ended while its requeued attempt runs
        interrupted = True
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGUSR2, signal.SIG_IGN)
        recorder.finish(RunStatus.INTERRUPTED, f"interrupted: {exc!r}")
        raise
    except OSError as exc:
        if not is_disk_full(exc):
            recorder.finish(RunStatus.FAILED, f"{type(exc).__name__}: {exc}")
            raise
        message = (f"disk full while writing {exc.filename or run_dir} ({exc.strerror}): the run stopped and is marked "
                   f"interrupted; free space on that file system, then resume with vc.resume_from={run_dir}")
        _finish_on_full_disk(recorder, message)
        raise DiskFullError(message) from exc
    except BaseException as exc:
        recorder.finish(RunStatus.FAILED, f"{type(exc).__name__}: {exc}")
        raise
    finally:
        adversary.release()  # idempotent: after a failure too
        signal.signal(signal.SIGTERM, previous)
        if not interrupted:
            signal.signal(signal.SIGUSR2, previous_usr2)
        locks.release()


def _finish_on_full_disk(recorder: RunRecorder, message: str) -> None:
    """Mark the run interrupted: the journal's ``run_end`` and the manifest each get written if they fit (a failed
    WAV's temporary file was removed, so a few kilobytes are usually free again)."""
    try:
        recorder.finish(RunStatus.INTERRUPTED, message)
        return
    except OSError as exc:
        log.error("could not journal the end of the run (%s)", exc)
    try:
        recorder.write_manifest(finished=True)
    except OSError as exc:
        log.error("could not update %s either (%s); `clonebench status` reads the journal", recorder.run_dir, exc)


def _generate(settings: GenerationSettings, adversary, samples: list[Sample], todo: list[Sample], recorder: RunRecorder,
              gate: SharedGate | None = None) -> None:
    client = settings.client
    headers = api_key_headers(client.api_key_env)
    policy = RetryPolicy(client.request_attempts, client.retry_initial_delay, client.retry_max_delay,
                         deadline=client.timeout, busy_status=adversary.busy_status,
                         busy_max_wait=client.timeout)
    pool = EndpointPool(list(client.endpoint_urls), client.endpoint_eject_after,
                        on_eject=lambda url, reason: recorder.journal.append("endpoint_ejected", endpoint=redact(url),
                                                                             reason=reason))
    if adversary.busy_status is not None and client.concurrency > len(pool.active):
        log.warning("adversary.concurrency=%d above %d %s endpoint(s), which synthesize one request at a time: the "
                    "extra requests wait for busy answers (not counted as attempts); list more servers in "
                    "adversary.endpoint_urls for throughput", client.concurrency, len(pool.active), client.protocol)
    if client.concurrency < len(pool.active):
        log.warning("%d endpoints but adversary.concurrency=%d: raise it to keep every endpoint busy",
                    len(pool.active), client.concurrency)

    async def main() -> None:
        limits = httpx.Limits(max_connections=client.concurrency + len(pool.active),
                              max_keepalive_connections=client.concurrency + len(pool.active))
        async with bounded_client(client.max_response_bytes, timeout=_timeout(settings), headers=headers,
                                  limits=limits) as http:
            recorder.extra["readiness"] = await wait_until_ready(adversary, http, pool, client.ready_timeout)
            if client.reference_check and gate is not None and gate.result is not None:
                recorder.extra["reference_check"] = {**gate.result, "shared_from": gate.run_dir}
                probed_seed(recorder, adversary, settings.seed, gate.result["seed_honoured"])
            elif client.reference_check:
                recorder.extra["reference_check"] = {"status": "running"}
                try:
                    recorder.extra["reference_check"] = await reference_check(samples, adversary, http, policy,
                                                                              recorder, settings.seed, pool)
                    probed_seed(recorder, adversary, settings.seed, recorder.extra["reference_check"]["seed_honoured"])
                    if gate is not None:
                        gate.result, gate.run_dir = recorder.extra["reference_check"], str(recorder.run_dir)
                except ClonebenchError:
                    recorder.extra["reference_check"] = {"status": "failed"}
                    raise
                except AttemptFailed as exc:
                    recorder.extra["reference_check"] = {"status": "error"}
                    raise ClonebenchError(f"reference check request failed: {exc} (see sample_events.jsonl)") from exc
            else:
                recorder.extra["reference_check"] = {"status": "disabled", "key": "adversary.reference_check=false"}
            recorder.write_manifest()
            with tqdm(total=len(samples), initial=len(samples) - len(todo), desc="generate", unit="pair") as progress:
                await generate_samples(todo, adversary, http, policy, recorder, client.concurrency, progress, pool)
            recorder.extra["endpoints"] = {"active": [redact(u) for u in pool.active],
                                           "taken_out": {redact(u): r for u, r in pool.ejected.items()}}

    asyncio.run(main())
