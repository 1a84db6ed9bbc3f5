"""The run's settings, composed from each phase's own slice (``data/settings.py``, ``adversary/settings.py``,
``evaluate/settings.py``) with every key type-checked and accounted for."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from clonebench.adversary.settings import ClientSettings, read_client
from clonebench.core.config_reader import ConfigReader
from clonebench.core.errors import ConfigError
from clonebench.data.identity import SEED_MAX
from clonebench.data.settings import DatasetSettings, read_dataset
from clonebench.serving.settings import ServingSettings, read_serving

DEFAULT_SEED = 42
SEED_KEYS = ("seed", "adversary.seed", "vc.seed")


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
    serving: ServingSettings | None = None   # a serving run (adversary.measure=stream, +serving=sweep)


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
        serving=read_serving(reader),
    )
    if (settings.client.measure == "stream") != (settings.serving is not None):
        raise ConfigError(f"{source}: a serving run needs both adversary.measure=stream and the serving.* settings: "
                          "start it with +serving=sweep (which sets both), and leave adversary.measure at quality "
                          "or ttfb otherwise")
    if settings.serving is not None and (suite is not None or settings.vc.evaluate_only):
        raise ConfigError(f"{source}: a serving run (+serving=sweep) only sends requests: it cannot be a suite run "
                          "or +vc.evaluate_only=true")
    if settings.vc.shard_index >= settings.vc.shard_count:
        raise ConfigError(f"{source}: vc.shard.index={settings.vc.shard_index} must be below vc.shard.count="
                          f"{settings.vc.shard_count} (e.g. vc.shard.count=8 'vc.shard.index=range(0,8)' with -m)")
    if settings.vc.generate_only and settings.vc.evaluate_only:
        raise ConfigError(f"{source}: +vc.generate_only=true and +vc.evaluate_only=true exclude each other")
    if check_unread:
        reader.check_all_read()
    return settings
