"""The run's settings, built from the composed config with every key type-checked and accounted for."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from clonebench.adversary.bounded import DEFAULT_MAX_RESPONSE_BYTES
from clonebench.config_reader import ConfigReader
from clonebench.data.identity import SEED_MAX
from clonebench.errors import ConfigError
from clonebench.redact import has_url_credentials, redact, register_client_secrets

DEFAULT_SEED = 42
SEED_KEYS = ("seed", "adversary.seed", "vc.seed")


@dataclass(frozen=True)
class DatasetSettings:
    name: str
    use_hf_dataset: bool
    manifest_filename: Path | None
    root_path: Path | None
    manifest_variant: str | None
    speaker_id: str | None
    hf_path: str | None
    hf_config: str | None
    hf_split: str
    hf_audio_columns: tuple[str, str]


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
    measure: str = "quality"             # quality | ttfb (timing mode: streamed requests, latency figures)
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES  # no answer is read past this (adversary/bounded.py)
    max_reference_seconds: float | None = 60.0            # longer references are refused at validation
    ready_timeout: float = 300.0         # seconds to poll a server that is still starting (loading its model)
    service_record: Path | None = None   # JSON written by scripts/serve_*.py: the server's exact command line


@dataclass(frozen=True)
class VCSettings:
    generate_only: bool
    evaluate_only: bool
    resume_from: Path | None
    shard_index: int = 0
    shard_count: int = 1


@dataclass(frozen=True)
class SuiteSettings:
    """A suite run (``configs/suite/*``): every selected task of an RVCBench suite, each task a run."""

    name: str                            # onboarding-v1 | core-v1 | full-v1, or the folder of a suite.json
    tasks: tuple[str, ...] | None        # null: every task; else these (their anchors and sources are added)
    model: str | None = None             # the model's name in submission.json and reports (null: run_name)


@dataclass(frozen=True)
class RunSettings:
    run_name: str
    seed: int | None
    results_dir: Path
    hash_cache: Path | None
    dataset: DatasetSettings
    client: ClientSettings
    vc: VCSettings
    adversary_params: dict[str, Any] = field(default_factory=dict)
    evaluation: Any = None
    suite: SuiteSettings | None = None


def read_suite(reader: ConfigReader) -> SuiteSettings | None:
    if not reader.has("suite"):
        return None
    tasks = reader.list("suite.tasks", None, allow_none=True)
    if tasks is not None and (not tasks or not all(isinstance(t, str) and t for t in tasks)):
        raise ConfigError(f"{reader.source}: suite.tasks={tasks!r} must be null (every task) or a non-empty list of "
                          "task names, e.g. suite.tasks=[chinese,french]")
    return SuiteSettings(name=reader.str("suite.name"), tasks=None if tasks is None else tuple(tasks),
                         model=reader.str("suite.model", None, allow_none=True))


def read_seed(reader: ConfigReader) -> int | None:
    """``+seed``, ``adversary.seed`` and ``vc.seed`` name one value; conflicting values are an error.

    ``null`` (e.g. ``+seed=null``) makes an unseeded run: no seed is sent.
    """
    given = {k: reader._raw(k, None) for k in SEED_KEYS if reader.has(k)}
    for key, value in given.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= SEED_MAX):
            raise ConfigError(f"{reader.source}: {key}={value!r} must be an integer in [0, {SEED_MAX}] or null (e.g. +seed=42)")
    if len(set(given.values())) > 1:
        raise ConfigError(f"{reader.source}: seed keys disagree: {given}; set just one (e.g. +seed=42)")
    return next(iter(given.values())) if given else DEFAULT_SEED


def read_dataset(reader: ConfigReader, suite: bool = False) -> DatasetSettings:
    columns = reader.list("dataset.hf_audio_columns", ["prompt_audio", "target_audio"])
    if len(columns) != 2 or not all(isinstance(c, str) for c in columns):
        raise ConfigError(f"{reader.source}: dataset.hf_audio_columns must name two columns [prompt, target]")
    settings = DatasetSettings(
        name=reader.str("dataset.name"),
        use_hf_dataset=reader.bool("dataset.use_hf_dataset"),
        manifest_filename=reader.path("dataset.manifest_filename", None),
        root_path=reader.path("dataset.root_path", None),
        manifest_variant=reader.str("dataset.manifest_variant", "speaker", allow_none=True),
        speaker_id=reader.str("dataset.speaker_id", None, allow_none=True),
        hf_path=reader.str("dataset.hf_path", None, allow_none=True),
        hf_config=reader.str("dataset.hf_config", None, allow_none=True),
        hf_split=reader.str("dataset.hf_split", "test"),
        hf_audio_columns=(columns[0], columns[1]),
    )
    if suite:  # a suite names its own pairs: only dataset.root_path is used (the local copy of its HF dataset)
        if settings.root_path is None:
            raise ConfigError(f"{reader.source}: a suite run reads its audio from a local copy of its Hugging Face "
                              "dataset: set dataset.root_path=DIR (DIR/<hf_config_name>/..., as in the dataset "
                              "repository at the suite's revision)")
        if settings.manifest_filename is not None or settings.use_hf_dataset:
            raise ConfigError(f"{reader.source}: a suite names its own pairs; remove dataset.manifest_filename and "
                              "set dataset.use_hf_dataset=false (configs/suite/* do)")
    elif not settings.use_hf_dataset and settings.manifest_filename is None:
        raise ConfigError(f"{reader.source}: dataset.use_hf_dataset=false needs +dataset.manifest_filename=PATH "
                          "(a JSON or CSV pair manifest)")
    return settings


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
        measure=reader.str("adversary.measure", "quality", choices=("quality", "ttfb")),
        max_response_bytes=reader.int("adversary.max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES, minimum=1024),
        max_reference_seconds=reader.float("adversary.max_reference_seconds", 60.0, minimum=0.001, allow_none=True),
        ready_timeout=reader.float("adversary.ready_timeout", 300.0, minimum=0.0),
        service_record=reader.path("adversary.service_record", None),
    )


def read_settings(cfg: DictConfig, source: str, *, check_unread: bool = True,
                  reader: ConfigReader | None = None) -> RunSettings:
    """All settings of a run; raises ConfigError naming the key and the fix for anything wrong or unread.

    Pass ``reader`` to inspect afterwards which keys were read (the dead-key test does).
    """
    from clonebench.adversary.registry import adversary_class
    from clonebench.evaluate.settings import read_evaluation

    reader = reader or ConfigReader(cfg, source)
    client = read_client(reader)
    params = adversary_class(client.protocol).read_params(reader)
    seed = read_seed(reader)
    suite = read_suite(reader)
    settings = RunSettings(
        run_name=reader.str("run_name"),
        seed=seed,
        results_dir=reader.path("paths.results_dir"),
        hash_cache=reader.path("paths.hash_cache", None),
        dataset=read_dataset(reader, suite=suite is not None),
        client=client,
        vc=VCSettings(
            generate_only=reader.bool("vc.generate_only", False),
            evaluate_only=reader.bool("vc.evaluate_only", False),
            resume_from=reader.path("vc.resume_from", None),
            shard_index=reader.int("vc.shard.index", 0, minimum=0),
            shard_count=reader.int("vc.shard.count", 1, minimum=1),
        ),
        adversary_params=params,
        evaluation=read_evaluation(reader, seed),
        suite=suite,
    )
    if settings.vc.shard_index >= settings.vc.shard_count:
        raise ConfigError(f"{source}: vc.shard.index={settings.vc.shard_index} must be below vc.shard.count="
                          f"{settings.vc.shard_count} (e.g. vc.shard.count=8 'vc.shard.index=range(0,8)' with -m)")
    if settings.vc.generate_only and settings.vc.evaluate_only:
        raise ConfigError(f"{source}: +vc.generate_only=true and +vc.evaluate_only=true exclude each other")
    if check_unread:
        reader.check_all_read()
    return settings
