"""What the generate phase reads of a run's settings: its slice, named here so the phase does not import the
composition above it (``config/settings.py``'s ``RunSettings`` satisfies it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from clonebench.adversary.settings import ClientSettings
from clonebench.data.settings import DatasetSettings


class ShardSettings(Protocol):
    resume_from: Path | None
    shard_index: int
    shard_count: int


class GenerationSettings(Protocol):
    run_name: str
    seed: int | None
    hash_cache: Path | None
    dataset: DatasetSettings
    client: ClientSettings
    vc: ShardSettings
    adversary_params: dict[str, Any]
