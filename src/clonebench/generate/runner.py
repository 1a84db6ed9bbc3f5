"""The asyncio generation loop: ``concurrency`` requests in flight, results journaled as they complete."""

from __future__ import annotations

import asyncio

import httpx
from tqdm import tqdm

from clonebench.adversary.base import Adversary, SynthesisInput
from clonebench.adversary.transport import AttemptFailed, RetryPolicy, send
from clonebench.errors import ReferenceIgnoredError
from clonebench.generate.recorder import RunRecorder
from clonebench.hashing import sha256_bytes
from clonebench.records import Sample

REFERENCE_CHECK_TEXT = "This short sentence checks that the voice follows the reference recording."


def synthesis_input(sample: Sample) -> SynthesisInput:
    return SynthesisInput(text=sample.row.target_text, language=sample.row.target_language,
                          reference_audio=sample.prompt.read_bytes(), reference_text=sample.row.prompt_text,
                          seed=sample.seed)


def _journal_hooks(recorder: RunRecorder, sample_id: str | None, purpose: str):
    return (lambda a: recorder.attempt("attempt_start", sample_id, a, purpose),
            lambda a: recorder.attempt("attempt_end", sample_id, a, purpose))


async def generate_samples(samples: list[Sample], adversary: Adversary, http: httpx.AsyncClient, policy: RetryPolicy,
                           recorder: RunRecorder, concurrency: int, progress: tqdm) -> None:
    semaphore = asyncio.Semaphore(concurrency)

    async def one(sample: Sample) -> None:
        async with semaphore:
            recorder.generating(sample)
            request = adversary.prepare(synthesis_input(sample))  # serialised once, resent as-is
            on_start, on_end = _journal_hooks(recorder, sample.sample_id, "sample")
            try:
                body, info, attempts = await send(http, request, policy, on_start, on_end,
                                                  endpoint=adversary.client.endpoint_url)
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


def pick_reference_pair(samples: list[Sample]) -> tuple[Sample, Sample] | None:
    """Two samples with different prompt audio, from different speakers where possible."""
    first = samples[0]
    others = [s for s in samples[1:] if s.prompt.sha256 != first.prompt.sha256]
    if not others:
        return None
    different_speaker = [s for s in others if s.speaker_id != first.speaker_id]
    return first, (different_speaker or others)[0]


async def reference_check(samples: list[Sample], adversary: Adversary, http: httpx.AsyncClient,
                          policy: RetryPolicy, recorder: RunRecorder, seed: int | None) -> dict:
    """Synthesize one text with two different references; identical audio means the reference is ignored.

    A fixed seed is sent (the run seed, or 0 for an unseeded run) so that sampling noise cannot make
    two unconditioned outputs differ.
    """
    pair = pick_reference_pair(samples)
    if pair is None:
        return {"status": "skipped", "reason": "the selected pairs have only one distinct reference recording"}
    check_seed = seed if seed is not None else 0
    digests = []
    for sample in pair:
        item = SynthesisInput(text=REFERENCE_CHECK_TEXT, language=sample.row.target_language,
                              reference_audio=sample.prompt.read_bytes(), reference_text=sample.row.prompt_text,
                              seed=check_seed)
        on_start, on_end = _journal_hooks(recorder, sample.sample_id, "reference_check")
        body, _, _ = await send(http, adversary.prepare(item), policy, on_start, on_end,
                                endpoint=adversary.client.endpoint_url)
        digests.append(sha256_bytes(body))
    result = {"status": "passed" if digests[0] != digests[1] else "failed", "seed": check_seed,
              "text": REFERENCE_CHECK_TEXT, "references": [s.prompt.sha256 for s in pair],
              "pairs": [s.pair_id for s in pair], "output_sha256": digests}
    if digests[0] == digests[1]:
        raise ReferenceIgnoredError(
            f"reference check failed: two different references ({pair[0].pair_id}, {pair[1].pair_id}) gave "
            f"byte-identical audio (sha256 {digests[0][:16]}...): the server ignores the reference audio (e.g. an "
            "empty reference_id folder, or s2.cpp dropping audio it cannot decode). Fix the server; "
            "adversary.reference_check=false skips this gate at your own risk"
        )
    return result
