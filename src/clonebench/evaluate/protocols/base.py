"""What a scorer is: metadata (VERSA-style) plus ``score_batch``; and the records it produces."""

from __future__ import annotations

import gc
import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from clonebench.core.hashing import HashCache


@dataclass(frozen=True)
class ScoreItem:
    """One generated WAV to score, with its reference recording and text."""

    sample_id: str
    pair_id: str
    speaker_id: str
    generated_path: Path
    generated_sha256: str
    target_path: Path | None
    target_sha256: str
    target_text: str
    language: str
    # the pair's prompt (the reference clip the system was given): read only by scorers with ``needs_prompt``
    prompt_path: Path | None = None
    prompt_sha256: str = ""
    prompt_text: str = ""
    prompt_language: str = ""


@dataclass
class ScoreRecord:
    sample_id: str
    values: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class Scorer(ABC):
    """A model (or algorithm) that yields one or more metrics per generated WAV.

    Metadata: ``metrics`` yielded, whether it needs the reference recording and/or the text, whether
    it runs on a GPU when one is given, its native sample rate. ``version()`` names everything that
    decides its numbers (model, normalisation, thresholds, variant); ``assets()`` their files' hashes.
    """

    name: ClassVar[str]
    metrics: ClassVar[tuple[str, ...]]
    needs_reference: ClassVar[bool]
    needs_text: ClassVar[bool]
    # reads the pair's prompt clip and transcript (ScoreItem.prompt_*): the prompt is then part of its cache key
    needs_prompt: ClassVar[bool] = False
    uses_gpu: ClassVar[bool]
    sample_rate: ClassVar[int]
    seed_policy: ClassVar[str] = "deterministic (no sampling)"
    # shortest clip (seconds) the scorer can use; shorter input is a per-sample metric error (evaluate/protocols/validity.py)
    min_duration_s: ClassVar[float] = 0.0
    # measures empty and silent clips (the failure detector flags them); every other scorer gives them an error
    scores_silence: ClassVar[bool] = False
    # computes on one CPU thread: scored beside the multi-threaded scorers (evaluate/execution/overlap.py)
    runs_beside_others: ClassVar[bool] = False
    # CPU-only and CPU-bound: may be scored in the process pool beside the GPU groups (evaluate/execution/cpu_pool.py)
    cpu_bound: ClassVar[bool] = False
    # on a CPU its numbers may change with the thread count (torch, CTranslate2 GEMMs): the count used is then
    # part of the fingerprint (evaluate/execution/device.py), checked by tests/integration/test_thread_dependence.py
    threads_change_numbers: ClassVar[bool] = True

    def __init__(self, options: dict[str, Any], device: str, hash_cache: HashCache):
        self.options = options
        self.device = device
        self.hash_cache = hash_cache

    @classmethod
    def preflight(cls, options: dict[str, Any]) -> None:
        """Raise a ClonebenchError naming the fix when a package or program the scorer needs is missing; called
        for every requested scorer before any scoring starts. Nothing to check by default."""

    @abstractmethod
    def version(self) -> str: ...

    @abstractmethod
    def load(self) -> None:
        """Resolve and verify assets, load the model onto ``self.device``."""

    @abstractmethod
    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]: ...

    def assets(self) -> list[dict]:
        return []

    def prepare(self, items: list[ScoreItem]) -> None:
        """Told, before the batches, every item this process is about to score (in batch order); nothing by
        default (ECAPA queues the clips for its embedding workers)."""

    def computing_threads(self, torch_threads: int) -> int:
        """The CPU thread count whose bits this loaded scorer's numbers are, when torch has ``torch_threads``
        (fingerprinted where ``threads_change_numbers``): that count, unless the scorer pins its kernels."""
        return torch_threads

    @abstractmethod
    def protocol(self) -> dict[str, Any]:
        """The few facts that make two scorers' numbers comparable (checked by ``clonebench compare``)."""

    def packages(self) -> tuple[str, ...]:
        return ("numpy", "soundfile")

    def precision(self) -> str:
        """The arithmetic the numbers come from (part of the comparable protocol; evaluate/execution/precision.py): float32
        unless a scorer says otherwise; on a GPU float32 is IEEE float32 (TF32 off)."""
        return "float32"

    def execution_facts(self) -> dict[str, Any]:
        """Backend facts beyond torch's that decide the numbers (fingerprinted), e.g. CTranslate2's compute type."""
        return {}

    def release(self) -> None:
        """Drop the model. A full ``gc.collect`` (and CUDA's cache) only when a GPU needs its memory back
        before the next scorer loads; on CPU, reference counting frees the model's arrays as they drop. A
        resolved asset (``self._asset``) is released too (its staged links removed)."""
        for attr in [a for a, v in vars(self).items() if a.startswith("_model")]:
            setattr(self, attr, None)
        if getattr(self, "_asset", None) is not None:
            from clonebench.evaluate.protocols.assets import release

            release(self._asset)
            self._asset = None
        if self.uses_gpu and str(self.device).startswith("cuda"):
            gc.collect()
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()

    @classmethod
    def source_files(cls) -> list[Path]:
        return [Path(inspect.getfile(cls)), Path(__file__)]
