"""The run settings outside ``run_vc.py``: ``configs/`` composed with Hydra's compose API, read like a run's.

``clonebench score`` and ``clonebench.metrics.Evaluator`` take a config name and Hydra overrides (e.g.
``--config-name demo evaluation.whisper.model=tiny.en``) and get exactly the scorer settings ``run_vc.py``
would get from the same ones: the same files, the same typed reader, the same unread-key check.
"""

from __future__ import annotations

import secrets

from omegaconf import DictConfig, OmegaConf

from clonebench.config.settings import RunSettings, read_settings
from clonebench.core.errors import ConfigError
from clonebench.core.paths import CONFIGS_DIR

CONFIGS = CONFIGS_DIR


def register_resolvers() -> None:
    """``${clonebench_token:}``: 8 random hex characters, fixed for the process (the run directory's suffix)."""
    if not OmegaConf.has_resolver("clonebench_token"):
        token = secrets.token_hex(4)
        OmegaConf.register_new_resolver("clonebench_token", lambda: token)


def compose_config(config_name: str = "vc", overrides: list[str] | tuple[str, ...] = ()) -> DictConfig:
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException

    if not (CONFIGS / f"{config_name}.yaml").is_file():
        raise ConfigError(f"--config-name {config_name}: no {CONFIGS / (config_name + '.yaml')} (try vc or demo)")
    register_resolvers()
    try:
        with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
            return compose(config_name=config_name, overrides=list(overrides))
    except HydraException as exc:  # a malformed or unknown override
        raise ConfigError(f"configs/{config_name}.yaml with overrides {list(overrides)}: {exc}") from exc


def scoring_settings(config_name: str = "vc", overrides: list[str] | tuple[str, ...] = (),
                     device: str | None = None) -> tuple[RunSettings, DictConfig, str]:
    """(settings, composed config, source label) for scoring; ``device`` sets ``+vc.evaluation.device``."""
    overrides = list(overrides) + ([f"+vc.evaluation.device={device}"] if device else [])
    cfg = compose_config(config_name, overrides)
    source = f"configs/{config_name}.yaml with overrides {overrides}"
    return read_settings(cfg, source), cfg, source
