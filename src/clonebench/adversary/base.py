"""What every adversary provides: a readiness probe, request encoding, its seed policy, and what the server
really does with the request (effective sampling, ignored fields, reference-duration rule, busy status)."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import httpx

from clonebench.adversary.settings import ClientSettings
from clonebench.core.config_reader import ConfigReader
from clonebench.core.errors import ServerNotReadyError


def not_ready(message: str, *, may_recover: bool) -> ServerNotReadyError:
    """A readiness failure; ``may_recover`` (connection refused, 5xx) means "poll again until ready_timeout"."""
    error = ServerNotReadyError(message)
    error.may_recover = may_recover
    return error


@dataclass(frozen=True)
class ReferenceRule:
    """The reference durations a server accepts (others are refused at validation, before any request)."""

    min_s: float | None
    max_s: float | None
    source: str  # where the limit comes from (server, version)

    def problem(self, duration_s: float) -> str | None:
        if self.min_s is not None and duration_s < self.min_s:
            return f"{duration_s:.2f} s is shorter than {self.min_s:g} s"
        if self.max_s is not None and duration_s > self.max_s:
            return f"{duration_s:.2f} s is longer than {self.max_s:g} s"
        return None


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
    # a non-2xx answer: the protocol's reading of its status and body (e.g. Triton's error JSON), added to the attempt
    describe_error: Callable[[int, bytes], str | None] | None = None
    # serving runs: a fresh incremental reader of the answer's audio (``stream_decode.py``), counting decodable samples
    decoder: Callable[[], Any] | None = None
    # an error body's text with this protocol's per-attempt parts set aside (e.g. the model instance that served
    # it), for the transport's early stop on a repeated error (adversary/error_meaning.py)
    error_key: Callable[[str], str] | None = None
    # the server sends its 200 before its model runs (e.g. FastAPI's StreamingResponse), so a 2xx whose body breaks
    # before its first byte means the model failed (a failed attempt, InvalidAudio, as an empty 200): why, or None
    failed_before_audio: str | None = None

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
    reference_container: str = "WAV"   # WAV, MP3, FLAC or OGG: the reference file's container, as validated
    prompt_language: str | None = None  # the reference transcript's language (None: the same as ``language``)

    @property
    def reference_mime(self) -> str:
        from clonebench.data.audio import MIME_TYPES

        return MIME_TYPES.get(self.reference_container, "audio/wav")


class Adversary(ABC):
    """A cloning server's protocol. Subclasses are stateless apart from their settings."""

    protocol: ClassVar[str]

    def __init__(self, client: ClientSettings, params: dict[str, Any]):
        self.client = client
        self.params = params
        self.service_record: dict | None = None

    def use_service_record(self, record: dict | None) -> None:
        """The launcher's service record (``adversary.service_record``), before any fingerprint is computed: what
        the server does with a request may depend on the build it records."""
        self.service_record = record

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

    def check_samples(self, samples: list) -> None:
        """Refuse the run before any request when a selected pair cannot be sent (e.g. a language the server lacks)."""

    def release(self) -> dict[str, Any]:
        """After the run (idempotent): undo what the adversary set up (e.g. staged references); what to record."""
        return {}

    def track_staging(self, note: Callable[[dict], None], leftovers: list[dict]) -> None:
        """For an adversary that stages files outside the run (references on the server's disk): ``note`` records
        each file durably before it is created; ``leftovers`` are what earlier runs of the resume chain recorded
        and never removed (killed), to remove at this run's release. Nothing to do for the others."""

    def seed_policy(self, seed: int | None) -> str:
        if not self.accepts_seed:
            return "not_supported"
        return "per_sample_seed(run_seed+source_index)" if seed is not None else "unseeded"

    def seeded(self, seed: int | None) -> bool:
        """Can this run's outputs be matched seed for seed? False for a server that takes no seed
        (``accepts_seed``), one known to ignore the seed it accepts (``seed_ignored``), or an unseeded run.
        (The determinism probe may still find that a server ignores its seed: ``seed_honoured`` false.)"""
        return self.accepts_seed and not self.seed_ignored and seed is not None and \
            self.seed_policy(seed) not in ("not_supported", "unseeded")

    @property
    def reads_seed(self) -> bool:
        """Does the server read the seed it is sent? What the adapter knows (no seed field, or one the server is
        known to ignore) wins over the determinism probe, which can show only that identical requests gave
        identical bytes, never that the seed decided them."""
        return self.accepts_seed and not self.seed_ignored

    def request_fingerprint_fields(self) -> dict[str, Any]:
        """What, besides the inputs and the service's files, decides the audio this adversary gets.

        Fields the server accepts but never reads (``ignored_fields``) are left out: changing them does not
        change the audio, so it must not block a resume. They stay recorded in the manifest's request."""
        fields = {"protocol": self.protocol, **self.params, "measure": self.client.measure}
        for name in self.ignored_fields:
            fields.pop(name, None)
        return {**fields, "effective_sampling": self.effective_sampling()}

    def effective_sampling(self) -> dict[str, Any]:
        """The sampling the server applies to every request: what is sent, else the server's own fixed value."""
        return {}

    def reference_rule(self) -> ReferenceRule | None:
        """This server's limits on the reference duration, or None when it has none."""
        return None

    supports_timing: ClassVar[bool] = False
    # seeds: False = the server has no seed field (none is sent; the run records seeded: false); seed_ignored = the
    # server accepts a seed and is known not to read it (it is sent, recorded as ignored, and seeded is false)
    accepts_seed: ClassVar[bool] = True
    seed_ignored: ClassVar[bool] = False

    # request fields the server accepts but never reads (documented per server in docs/servers.md)
    ignored_fields: ClassVar[frozenset[str]] = frozenset()
    # an HTTP status that means "busy with another synthesis" (resent without spending an attempt)
    busy_status: ClassVar[int | None] = None
