"""The leak check of ``clonebench score``: is a submitted file one of the hidden answers (a target recording)?

Target recordings are never exported (``clonebench prompts``), so a submitted file that is one is a leak, refused
before scoring. rvcbench 2.2.1 checks byte identity with the pair's own target; here a file is a leak when it is

- byte-identical to any hidden target of the pair set;
- sample-identical to one: same rate and length, every (mono) sample within one 16-bit step (a re-encoded copy:
  another sample format, header or channel layout);
- a processed copy of its own pair's target: durations within 5 %, and the copy rule of ``failures/copy.py``
  (both at 16 kHz mono, a normalised cross-correlation of at least 0.95 at some lag within 0.2 s), the rule the
  failure scorer's ``prompt_copy`` flag applies to a pair's prompt.

A target that is also exported as some pair's reference is public and is not a leak.

Target recordings are read through ``clonebench.core.untrusted`` confined to the pair set's data root (its
``origin``'s ``root`` or ``data_root``): a target that is a FIFO, a device or a link leading out of the root is
never read (and is then not compared).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from clonebench.core.records import Sample
from clonebench.core.untrusted import UntrustedFileError, read_bytes
from clonebench.data.audio import (
    InvalidAudio,
    WavInfo,
    inspect_wav,
    to_mono,
    validate_wav,
)
from clonebench.external.pair_sets import PairSet
from clonebench.failures.copy import MAX_LAG_S, RATE, at_16k, peak_correlation

PCM16_STEP = 1.0 / 32768
MIN_CORRELATION = 0.95
DURATION_TOLERANCE = 0.05
MAX_TARGET_BYTES = 2 * 1024 ** 3  # as a submitted file's bound (external/submitted.py MAX_BYTES)


def data_root(pair_set: PairSet) -> Path | None:
    """The folder the pair set's audio was verified under (None: rows held in memory, or no root recorded)."""
    root = (pair_set.origin or {}).get("root") or (pair_set.origin or {}).get("data_root")
    return Path(root) if root else None


def read_target(sample: Sample, root: Path | None) -> bytes:
    """The target recording's bytes: in memory, or its file read confined to ``root`` (UntrustedFileError else)."""
    if sample.target.data is not None:
        return sample.target.data
    path = Path(sample.target.path)
    # a path named under the root must stay there once links are followed; a target from elsewhere (a derived
    # task's clone in a run folder) is read as a regular file only
    under = root is not None and (path == root or root in path.parents or
                                  Path(root).resolve() in Path(os.path.abspath(path)).parents)
    return read_bytes(path, max_bytes=MAX_TARGET_BYTES, within=root if under else None, what="target recording")


class Targets:
    """The hidden target recordings of a pair set: by sha256, by (rate, frames), and decoded on demand."""

    def __init__(self, pair_set: PairSet):
        self.root = data_root(pair_set)
        public = {s.prompt.sha256 for s in pair_set.samples}
        self.hidden = {s.sample_id for s in pair_set.samples if s.target.sha256 not in public}
        self.by_sha = {s.target.sha256: s for s in pair_set.samples if s.sample_id in self.hidden}
        self.by_shape: dict[tuple[int, int], list[Sample]] = {}
        for sample in self.by_sha.values():
            try:
                info = validate_wav(read_target(sample, self.root))
            except (OSError, InvalidAudio, UntrustedFileError):
                continue
            self.by_shape.setdefault((info.sample_rate, info.frames), []).append(sample)

    def _decoded(self, sample: Sample) -> tuple[WavInfo, np.ndarray] | None:
        try:
            return inspect_wav(read_target(sample, self.root))
        except (OSError, InvalidAudio, UntrustedFileError):
            return None

    def leak(self, own: Sample, sha: str, info: WavInfo, samples: np.ndarray) -> str | None:
        """Why the submitted file for ``own`` is a hidden target, or None."""
        if sha in self.by_sha:
            return f"byte-identical to the hidden target recording of pair {self.by_sha[sha].pair_id}"
        mono = to_mono(samples).astype(np.float64)
        for target in self.by_shape.get((info.sample_rate, info.frames), []):
            decoded = self._decoded(target)
            if decoded and np.max(np.abs(mono - to_mono(decoded[1]).astype(np.float64))) <= PCM16_STEP * 1.001:
                return (f"sample-identical to the hidden target recording of pair {target.pair_id} (a re-encoded "
                        "copy of the answer)")
        decoded = self._decoded(own) if own.sample_id in self.hidden else None
        if decoded is None or abs(info.duration_s - decoded[0].duration_s) > DURATION_TOLERANCE * decoded[0].duration_s:
            return None
        score = peak_correlation(at_16k(samples, info.sample_rate), at_16k(decoded[1], decoded[0].sample_rate),
                                 int(MAX_LAG_S * RATE))
        if score >= MIN_CORRELATION:
            return (f"a processed copy of the hidden target recording of its pair (waveform correlation {score:.3f}: "
                    "resampled, rescaled or re-encoded)")
        return None
