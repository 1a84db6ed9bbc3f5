"""Reference length rule, checked at validation before any request.

A reference recording longer than ``adversary.max_reference_seconds`` (default 60 s; ``null``: no limit) is
refused, as is one outside the range the protocol's server accepts (``Adversary.reference_seconds``, e.g. a
server that answers 400 outside 1-30 s): every offending pair is named with its duration and the limit, in
one ManifestError, and nothing is sent. Zero-shot cloning takes a few seconds to half a minute of
reference; an hour-long file is a mistake that would otherwise be uploaded with every request.
"""

from __future__ import annotations

import io

import soundfile as sf

from clonebench.errors import ManifestError
from clonebench.records import Sample


def reference_seconds(sample: Sample) -> float:
    """Duration of the sample's reference (prompt) recording, from its header."""
    source = io.BytesIO(sample.prompt.data) if sample.prompt.data is not None else sample.prompt.path
    info = sf.info(source)
    return info.frames / info.samplerate


def check_reference_lengths(samples: list[Sample], max_seconds: float | None,
                            protocol_range: tuple[float | None, float | None], label: str) -> None:
    """Raise ManifestError naming every pair whose reference is too long (or outside the protocol's range)."""
    low, high = protocol_range
    problems: list[str] = []
    bad: dict[int, str] = {}
    for sample in samples:
        seconds = reference_seconds(sample)
        where = f"{label} row {sample.row_number} (pair_id {sample.pair_id!r}) prompt_file_name"
        if max_seconds is not None and seconds > max_seconds:
            problem = (f"{where}: reference of {seconds:.1f} s is longer than adversary.max_reference_seconds="
                       f"{max_seconds:g} (trim it, or raise the limit: adversary.max_reference_seconds=null lifts it)")
        elif (high is not None and seconds > high) or (low is not None and seconds < low):
            accepted = " and ".join(([f"at least {low:g} s"] if low is not None else [])
                                    + ([f"at most {high:g} s"] if high is not None else []))
            problem = (f"{where}: reference of {seconds:.2f} s, but this protocol's server accepts {accepted} "
                       "(trim or replace the reference)")
        else:
            continue
        problems.append(problem)
        bad[sample.row_number] = problem
    if problems:
        raise ManifestError(label, problems, bad)
