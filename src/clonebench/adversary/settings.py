"""Settings of the adversary client: the protocol-independent ``adversary.*`` keys (each protocol reads its own
parameters: ``Adversary.read_params``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clonebench.adversary.bounded import DEFAULT_MAX_RESPONSE_BYTES
from clonebench.core.config_reader import ConfigReader
from clonebench.core.errors import ConfigError
from clonebench.core.redact import has_url_credentials, redact, register_client_secrets


@dataclass(frozen=True)
class ClientSettings:
    """Protocol-independent settings of the adversary client."""

    protocol: str
    endpoint_url: str
    endpoint_urls: tuple[str, ...]       # every endpoint of the model; (endpoint_url,) unless several are given
    endpoint_eject_after: int
    api_key_env: str | None
    timeout: float
    request_attempts: int
    retry_initial_delay: float
    retry_max_delay: float
    concurrency: int
    max_samples: int | None
    reference_check: bool
    service_code_path: Path | None
    service_checkpoint_path: Path | None
    service_codec_checkpoint_path: Path | None
    # quality | ttfb (timing mode: streamed requests, latency figures) | stream (a serving run: serving/)
    measure: str = "quality"
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES  # no answer is read past this (adversary/bounded.py)
    max_reference_seconds: float | None = 60.0            # longer references are refused at validation
    ready_timeout: float = 300.0         # seconds to poll a server that is still starting (loading its model)
    service_record: Path | None = None   # JSON written by scripts/serve_*.py: the server's exact command line

    @property
    def streams(self) -> bool:
        """Timing and serving runs ask for the streamed answer where the protocol has one."""
        return self.measure in ("ttfb", "stream")


def read_client(reader: ConfigReader) -> ClientSettings:
    endpoint = reader.str("adversary.endpoint_url")
    several = reader.list("adversary.endpoint_urls", None, allow_none=True)
    urls = tuple(str(u) for u in several) if several else (endpoint,)
    for key, url in [("adversary.endpoint_url", endpoint)] + [("adversary.endpoint_urls", u) for u in urls]:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"{reader.source}: {key} has {redact(url)!r}; every endpoint must be an http(s) URL")
    api_key_env = reader.str("adversary.api_key_env", None, allow_none=True)
    if api_key_env and any(has_url_credentials(u) for u in urls):
        raise ConfigError(f"{reader.source}: an endpoint URL carries credentials (user:password@) and "
                          f"adversary.api_key_env={api_key_env} is set too: HTTP sends one Authorization header, so "
                          "one of them would be silently dropped. Keep one: remove user:password@ from the URL, or "
                          "set adversary.api_key_env=null")
    register_client_secrets(urls, api_key_env)  # from now on redacted from every artifact, log line and message
    return ClientSettings(
        protocol=reader.str("adversary.protocol"),
        endpoint_url=urls[0],
        endpoint_urls=urls,
        endpoint_eject_after=reader.int("adversary.endpoint_eject_after", 3, minimum=1),
        api_key_env=api_key_env,
        timeout=reader.float("adversary.timeout", minimum=0.001),
        request_attempts=reader.int("adversary.request_attempts", minimum=1, maximum=100),
        retry_initial_delay=reader.float("adversary.retry_initial_delay", minimum=0.0),
        retry_max_delay=reader.float("adversary.retry_max_delay", minimum=0.0),
        concurrency=reader.int("adversary.concurrency", minimum=1, maximum=1024),
        max_samples=reader.int("adversary.max_samples", None, minimum=1, allow_none=True),
        reference_check=reader.bool("adversary.reference_check"),
        service_code_path=reader.path("adversary.service_code_path", None),
        service_checkpoint_path=reader.path("adversary.service_checkpoint_path", None),
        service_codec_checkpoint_path=reader.path("adversary.service_codec_checkpoint_path", None),
        measure=reader.str("adversary.measure", "quality", choices=("quality", "ttfb", "stream")),
        max_response_bytes=reader.int("adversary.max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES, minimum=1024),
        max_reference_seconds=reader.float("adversary.max_reference_seconds", 60.0, minimum=0.001, allow_none=True),
        ready_timeout=reader.float("adversary.ready_timeout", 300.0, minimum=0.0),
        service_record=reader.path("adversary.service_record", None),
    )
