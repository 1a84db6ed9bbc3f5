"""The asyncio generation loop: ``concurrency`` requests in flight, results journaled as they complete."""

from __future__ import annotations

import asyncio
import logging

import httpx
from tqdm import tqdm

from clonebench.adversary.base import Adversary, SynthesisInput
from clonebench.adversary.endpoints import EndpointPool
from clonebench.adversary.transport import AttemptFailed, RetryPolicy, send
from clonebench.core.errors import ReferenceIgnoredError
from clonebench.core.hashing import sha256_bytes
from clonebench.core.records import Sample
from clonebench.data.audio import input_container, inspect_wav, to_mono
from clonebench.data.audio_cache import verified_bytes
from clonebench.data.voice_features import profile, voice_distance
from clonebench.generate.recorder import RunRecorder

log = logging.getLogger(__name__)
REFERENCE_CHECK_TEXT = "This short sentence checks that the voice follows the reference recording."


def synthesis_input(sample: Sample) -> SynthesisInput:
    return SynthesisInput(text=sample.row.target_text, language=sample.row.target_language,
                          reference_audio=verified_bytes(sample.prompt, f"pair {sample.pair_id} prompt_file_name"),
                          reference_text=sample.row.prompt_text,
                          seed=sample.seed, reference_container=input_container(sample.row.prompt_file_name),
                          prompt_language=sample.row.prompt_language)


def _journal_hooks(recorder: RunRecorder, sample_id: str | None, purpose: str):
    return (lambda a: recorder.attempt("attempt_start", sample_id, a, purpose),
            lambda a: recorder.attempt("attempt_end", sample_id, a, purpose))


def busy_hook(recorder: RunRecorder, sample_id: str | None, purpose: str):
    """Journal a busy answer (resent without spending an attempt)."""
    return lambda a, wait_s: recorder.journal.append("server_busy", sample_id=sample_id, purpose=purpose,
                                                     attempt=a.attempt, endpoint=a.endpoint, status_code=a.status_code,
                                                     wait_s=wait_s)


async def generate_samples(samples: list[Sample], adversary: Adversary, http: httpx.AsyncClient, policy: RetryPolicy,
                           recorder: RunRecorder, concurrency: int, progress: tqdm, pool: EndpointPool) -> None:
    semaphore = asyncio.Semaphore(concurrency)

    async def one(sample: Sample) -> None:
        async with semaphore:
            recorder.generating(sample)
            request = adversary.prepare(synthesis_input(sample))  # serialised once, resent as-is
            on_start, on_end = _journal_hooks(recorder, sample.sample_id, "sample")
            try:
                body, info, attempts = await send(http, request, policy, on_start, on_end, pool,
                                                  busy_hook(recorder, sample.sample_id, "sample"))
            except AttemptFailed as exc:
                recorder.failed(sample, exc.error_class, str(exc), len(getattr(exc, "attempts", [])))
                progress.update(1)
                return
        # saved outside the semaphore, in a thread: the next request is already on its way while
        # this WAV is validated, written and fsync'd
        await asyncio.to_thread(recorder.save_audio, sample, body, info, attempts)
        progress.update(1)

    tasks = [asyncio.create_task(one(s)) for s in samples]
    try:
        for task in asyncio.as_completed(tasks):
            await task
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def pick_reference_pair(samples: list[Sample], speakers_must_differ: bool = False) -> tuple[Sample, Sample] | None:
    """Two samples with different prompt audio, from different speakers where possible (or required)."""
    first = samples[0]
    others = [s for s in samples[1:] if s.prompt.sha256 != first.prompt.sha256]
    different_speaker = [s for s in others if s.speaker_id != first.speaker_id]
    chosen = different_speaker if speakers_must_differ else (different_speaker or others)
    return (first, chosen[0]) if chosen else None


async def _gate_send(sample: Sample, adversary: Adversary, http: httpx.AsyncClient, policy: RetryPolicy,
                     recorder: RunRecorder, seed: int | None, pool: EndpointPool,
                     purpose: str = "reference_check") -> bytes:
    item = SynthesisInput(text=REFERENCE_CHECK_TEXT, language=sample.row.target_language,
                          reference_audio=verified_bytes(sample.prompt, f"pair {sample.pair_id} prompt_file_name"),
                          reference_text=sample.row.prompt_text, seed=seed,
                          reference_container=input_container(sample.row.prompt_file_name),
                          prompt_language=sample.row.prompt_language)
    on_start, on_end = _journal_hooks(recorder, sample.sample_id, purpose)
    body, _, _ = await send(http, adversary.prepare(item), policy, on_start, on_end, pool,
                            busy_hook(recorder, sample.sample_id, purpose))
    return body


async def determinism_probe(sample: Sample, adversary: Adversary, http: httpx.AsyncClient, policy: RetryPolicy,
                            recorder: RunRecorder, seed: int, pool: EndpointPool) -> tuple[dict, list[bytes]]:
    """Does the server honour the seed it claims? The same seeded request twice must give identical bytes.

    A cold first request to a fresh Fish server is known to differ from warm ones, so when the first two
    differ a third is sent, and the last two decide. Some vLLM-Omni versions accept ``seed`` and ignore it.
    Returns the verdict and the bodies (the reference check reuses them as its reference-A outputs).
    """
    bodies = [await _gate_send(sample, adversary, http, policy, recorder, seed, pool, "determinism_probe")
              for _ in range(2)]
    if bodies[0] != bodies[1]:
        bodies.append(await _gate_send(sample, adversary, http, policy, recorder, seed, pool, "determinism_probe"))
    identical = bodies[-1] == bodies[-2]
    if not identical:
        log.warning("the server does not honour seeds (the same seeded request gave different audio %d times): this "
                    "run is treated as unseeded (compare-check, reports, repeat)", len(bodies))
    # identical bytes show determinism; they show a honoured seed only where the adapter knows the server reads it
    known = {} if adversary.reads_seed else {"seed_handling": "sent, ignored by the server: identical outputs show "
                                                              "a deterministic server, not a honoured seed"}
    return ({"seed_honoured": identical and adversary.reads_seed, "identical": identical, **known, "seed": seed,
             "pair": sample.pair_id, "output_sha256": [sha256_bytes(b) for b in bodies],
             "method": "the same seeded request sent twice (a third time if the first two differ: cold start)"}, bodies)


def probed_seed(recorder: RunRecorder, adversary: Adversary, seed: int | None, honoured: bool | None) -> None:
    """Take the gate's verdict on the seed into the run's record, only where the adapter does not know better: a
    run with no seed sent, or a seed the adapter knows the server ignores, stays unseeded whatever the probe saw."""
    if recorder.seeds_sent and seed is not None and adversary.reads_seed:
        recorder.extra["seed_honoured"] = honoured
        recorder.extra["seeded"] = recorder.extra["seeded"] and honoured is not False


def _voice(body: bytes) -> tuple[float | None, float]:
    info, samples = inspect_wav(body)
    return profile(to_mono(samples), info.sample_rate)


async def reference_check(samples: list[Sample], adversary: Adversary, http: httpx.AsyncClient,
                          policy: RetryPolicy, recorder: RunRecorder, seed: int | None, pool: EndpointPool) -> dict:
    """The gate: does the server honour its seed (determinism probe), and does it follow the reference?

    For a server that claims seeds, the reference A is sent twice with one seed (the run's, or 0 for an unseeded
    run): identical bytes mean the seed is honoured (``seed_honoured``). Then reference B: with an honoured seed
    the two references' outputs must differ in bytes. A server without a seed (s2.cpp), or one that ignores it,
    differs on every request anyway, so there the voice distance (median F0 and spectral centroid) between A
    and B must clearly exceed the distance between the two A outputs (more than twice, and above 0.1).
    """
    claims_seed = adversary.seed_policy(seed) != "not_supported"
    check_seed = seed if seed is not None else 0
    probe, probe_bodies = (await determinism_probe(samples[0], adversary, http, policy, recorder, check_seed, pool)
                           if claims_seed else (None, []))
    unseeded = not claims_seed or not probe["identical"]  # deterministic answers: bytes can be compared
    verdict = {"seed_honoured": probe["seed_honoured"] if probe else False,
               **({"determinism_probe": probe} if probe else {})}
    pair = pick_reference_pair(samples, speakers_must_differ=unseeded)
    if pair is None:
        if claims_seed and unseeded:
            return {**verdict, "status": "skipped", "reason": "the server ignores seeds, so the check compares two "
                    "speakers' voices, but the selected pairs have one speaker"}
        if unseeded:
            raise ReferenceIgnoredError(
                f"the reference check is mandatory for {adversary.protocol} and, without a seed, compares two "
                "speakers' voices, but the selected pairs have one speaker: select pairs of at least two speakers")
        return {**verdict, "status": "skipped", "reason": "the selected pairs have only one distinct reference recording"}
    base = {**verdict, "text": REFERENCE_CHECK_TEXT, "references": [s.prompt.sha256 for s in pair],
            "pairs": [s.pair_id for s in pair]}
    if unseeded:
        if pair[0] is samples[0] and len(probe_bodies) >= 2:
            first, again = probe_bodies[-2], probe_bodies[-1]
        else:
            first, again = [await _gate_send(pair[0], adversary, http, policy, recorder, None, pool) for _ in range(2)]
        other = await _gate_send(pair[1], adversary, http, policy, recorder, None, pool)
        same = voice_distance(_voice(first), _voice(again))
        different = voice_distance(_voice(first), _voice(other))
        passed = different > max(2.0 * same, 0.1)
        result = {**base, "status": "passed" if passed else "failed", "method": "voice distance (no seed)",
                  "same_reference_distance": round(same, 4), "different_reference_distance": round(different, 4)}
        detail = f"voice distance between the references' outputs {different:.3f} vs {same:.3f} for one reference twice"
    else:
        digests = [sha256_bytes(probe_bodies[-1]),
                   sha256_bytes(await _gate_send(pair[1], adversary, http, policy, recorder, check_seed, pool))]
        passed = digests[0] != digests[1]
        method = "byte comparison (seeded)" if probe["seed_honoured"] else \
            "byte comparison (deterministic server; the seed is not read)"
        result = {**base, "status": "passed" if passed else "failed", "method": method,
                  "seed": check_seed, "output_sha256": digests}
        detail = f"byte-identical audio (sha256 {digests[0][:16]}...)"
    if not passed:
        raise ReferenceIgnoredError(
            f"reference check failed: two different references ({pair[0].pair_id}, {pair[1].pair_id}) gave {detail}: "
            "the server ignores the reference audio (e.g. an empty reference_id folder, or s2.cpp dropping audio it "
            "cannot decode). Fix the server; adversary.reference_check=false skips this gate at your own risk "
            "(not allowed for s2cpp_http)")
    return result
