"""What every adversary provides: a readiness probe, request encoding, its seed policy."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import cached_property
from collections.abc import Callable
from typing import Any, ClassVar

import httpx

from clonebench.config_reader import ConfigReader
from clonebench.settings import ClientSettings


@dataclass(frozen=True)
class PreparedRequest:
    """A request serialised once; every retry resends exactly these bytes."""

    method: str
    url: str
    content: bytes
    headers: dict[str, str] = field(default_factory=dict)
    # timing mode: read the body as a stream (time to first byte), then turn it into a WAV with ``to_wav``
    stream: bool = False
    to_wav: Callable[[bytes], bytes] | None = None

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()


@dataclass(frozen=True)
class SynthesisInput:
    text: str
    language: str
    reference_audio: bytes
    reference_text: str
    seed: int | None


class Adversary(ABC):
    """A cloning server's protocol. Subclasses are stateless apart from their settings."""

    protocol: ClassVar[str]

    def __init__(self, client: ClientSettings, params: dict[str, Any]):
        self.client = client
        self.params = params

    @classmethod
    @abstractmethod
    def read_params(cls, reader: ConfigReader) -> dict[str, Any]:
        """Read and validate this protocol's own config keys."""

    @abstractmethod
    async def check_ready(self, http: httpx.AsyncClient, endpoint_url: str) -> dict[str, Any]:
        """Probe the server behind ``endpoint_url``; raise ServerNotReadyError naming the URL and what came back."""

    @abstractmethod
    def prepare(self, item: SynthesisInput) -> PreparedRequest:
        """Serialise one synthesis request."""

    def seed_policy(self, seed: int | None) -> str:
        return "per_sample_seed(run_seed+source_index)" if seed is not None else "unseeded"

    def request_fingerprint_fields(self) -> dict[str, Any]:
        """What, besides the inputs and the service's files, decides the audio this adversary gets."""
        return {"protocol": self.protocol, **self.params, "measure": self.client.measure}

    supports_timing: ClassVar[bool] = False

    # the reference durations (seconds, min, max; None: no bound) this protocol's server accepts; checked at
    # validation together with adversary.max_reference_seconds (data/reference_length.py)
    reference_seconds: ClassVar[tuple[float | None, float | None]] = (None, None)
