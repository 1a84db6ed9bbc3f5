"""Typed records that flow through the pipeline: pairs, samples, attempts, sample outcomes."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path


class SampleStatus(str, Enum):
    PENDING = "pending"
    GENERATING = "generating"
    GENERATED = "generated"
    GENERATION_FAILED = "generation_failed"
    INPUT_FAILED = "input_failed"


class RunStatus(str, Enum):
    RUNNING = "running"
    GENERATED = "generated"
    PARTIAL = "partial"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


MAX_AUDIO_REF_BYTES = 512 * 1024 * 1024  # an input clip larger than this is refused when read again to be sent


@dataclass(frozen=True)
class PairRow:
    """One manifest row, as written by the dataset's author."""

    dataset_name: str
    split: str
    pair_id: str
    speaker_id: str
    prompt_file_name: str
    target_file_name: str
    prompt_text: str
    target_text: str
    prompt_language: str
    target_language: str
    source_index: int
    manifest_variant: str | None = None
    source_manifest: str | None = None
    source_row: int | None = None
    prompt_sha256: str | None = None
    target_sha256: str | None = None


@dataclass(frozen=True)
class AudioRef:
    """Where a sample's audio lives: a file, or bytes held in memory (HF datasets rows)."""

    label: str
    sha256: str
    path: Path | None = None
    data: bytes | None = field(default=None, repr=False)

    def read_bytes(self) -> bytes:
        if self.data is not None:
            return self.data
        assert self.path is not None
        from clonebench.core.untrusted import (
            read_bytes,  # a clip of the dataset root: a bounded regular file
        )

        return read_bytes(self.path, max_bytes=MAX_AUDIO_REF_BYTES, what=f"{self.label} audio")


@dataclass(frozen=True)
class Sample:
    """A validated pair ready for generation: identity, seed and verified audio."""

    row: PairRow
    row_number: int
    sample_id: str
    prompt: AudioRef
    target: AudioRef
    seed: int | None

    @property
    def pair_id(self) -> str:
        return self.row.pair_id

    @property
    def speaker_id(self) -> str:
        return self.row.speaker_id

    def audio_relpath(self) -> str:
        """Where the generated WAV lives inside a run directory."""
        return f"generated_audio/{safe_component(self.row.speaker_id)}/{self.sample_id}.wav"


def safe_component(text: str) -> str:
    """A file-name component from a speaker id: keeps [A-Za-z0-9._-], replaces anything else."""
    cleaned = "".join(c if c.isalnum() or c in "._-" else "_" for c in text)
    return cleaned.strip(".") or "_"


@dataclass
class Attempt:
    """One HTTP attempt at one request, as journaled."""

    attempt: int
    started_at: float
    ended_at: float | None = None
    duration_s: float | None = None
    status_code: int | None = None
    outcome: str | None = None  # ok | transient | permanent | unknown_outcome
    error_class: str | None = None
    error: str | None = None
    request_bytes: int | None = None
    request_sha256: str | None = None
    response_bytes: int | None = None
    response_sha256: str | None = None
    retry_after_s: float | None = None
    endpoint: str | None = None
    ttfb_s: float | None = None  # timing mode: request start to the first body byte, at the client

    def as_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class SampleOutcome:
    """What a sample ended as: audio on disk with its hash, or an error."""

    sample_id: str
    pair_id: str
    speaker_id: str
    status: SampleStatus
    audio_path: str | None = None
    audio_sha256: str | None = None
    audio_bytes: int | None = None
    sample_rate: int | None = None
    frames: int | None = None
    channels: int | None = None
    duration_s: float | None = None
    synthesis_time_s: float | None = None
    attempts: int = 0
    error_class: str | None = None
    error: str | None = None
    reused_from: str | None = None
    ttfb_s: float | None = None   # timing mode only (adversary.measure=ttfb)
    rtf: float | None = None      # timing mode only: total request time / audio seconds

    def as_dict(self) -> dict:
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}  # flat: no deep copy needed
        out["status"] = self.status.value
        return {k: v for k, v in out.items() if v is not None}

    @classmethod
    def from_dict(cls, data: dict) -> "SampleOutcome":
        known = {f for f in cls.__dataclass_fields__}
        kwargs = {k: v for k, v in data.items() if k in known}
        kwargs["status"] = SampleStatus(kwargs["status"])
        return cls(**kwargs)
