"""Reference length rule, checked at validation before any request.

A reference recording longer than ``adversary.max_reference_seconds`` (default 60 s; ``null``: no limit) is
refused: every offending pair is named with its duration and the limit, in one ManifestError, and nothing is
sent. (A protocol's own range, e.g. vLLM-Omni's 1-30 s, is the adversary's ``reference_rule``, checked by
``generate/readiness.py``.) Zero-shot cloning takes a few seconds to half a minute of
reference; an hour-long file is a mistake that would otherwise be uploaded with every request.
"""

from __future__ import annotations

import io

import soundfile as sf

from clonebench.core.errors import ManifestError
from clonebench.core.records import Sample
from clonebench.data.audio_cache import verified_bytes


def reference_seconds(sample: Sample) -> float:
    """Duration of the sample's reference (prompt) recording, from its header.

    The file was validated as a WAV; if its header cannot be read now, it changed since: ``verified_bytes``
    says so (InputChangedError, naming the file), and nothing is sent."""
    source = io.BytesIO(sample.prompt.data) if sample.prompt.data is not None else sample.prompt.path
    try:
        info = sf.info(source)
    except (RuntimeError, sf.LibsndfileError):
        verified_bytes(sample.prompt, f"pair {sample.pair_id} prompt_file_name")
        raise
    return info.frames / info.samplerate


def check_reference_lengths(samples: list[Sample], max_seconds: float | None, label: str) -> None:
    """Raise ManifestError naming every pair whose reference is longer than ``max_seconds``."""
    if max_seconds is None:
        return
    problems: list[str] = []
    bad: dict[int, str] = {}
    for sample in samples:
        seconds = reference_seconds(sample)
        where = f"{label} row {sample.row_number} (pair_id {sample.pair_id!r}) prompt_file_name"
        if seconds <= max_seconds:
            continue
        problem = (f"{where}: reference of {seconds:.1f} s is longer than adversary.max_reference_seconds="
                   f"{max_seconds:g} (trim it, or raise the limit: adversary.max_reference_seconds=null lifts it)")
        problems.append(problem)
        bad[sample.row_number] = problem
    if problems:
        raise ManifestError(label, problems, bad)
