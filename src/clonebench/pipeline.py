"""Entry point behind ``run_vc.py``: settings -> generate phase (-> evaluate phase)."""

from __future__ import annotations

import logging
import secrets
import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from clonebench.errors import ClonebenchError, ConfigError
from clonebench.provenance import environment_provenance
from clonebench.records import RunStatus
from clonebench.settings import RunSettings, read_settings

log = logging.getLogger("clonebench")


def register_resolvers() -> None:
    """``${clonebench_token:}``: 8 random hex characters, fixed for the process (the run directory's suffix)."""
    if not OmegaConf.has_resolver("clonebench_token"):
        token = secrets.token_hex(4)
        OmegaConf.register_new_resolver("clonebench_token", lambda: token)


def config_container(cfg: DictConfig) -> dict:
    container = OmegaConf.to_container(cfg, resolve=True)
    container.pop("hydra", None)
    return container


def run(cfg: DictConfig, run_dir: Path, source: str) -> RunStatus:
    settings: RunSettings = read_settings(cfg, source)
    if not settings.vc.generate_only:
        raise ConfigError(f"{source}: the evaluate phase is not part of this version; pass +vc.generate_only=true")
    from clonebench.generate.phase import run_generation

    header = {"run_name": settings.run_name, "phase": "generate", "config_source": source,
              "config": config_container(cfg), "provenance": environment_provenance()}
    recorder = run_generation(settings, run_dir, header)
    return recorder.status


def main(cfg: DictConfig, run_dir: Path, source: str) -> int:
    """Run and turn user-facing errors into one clear log line and exit status 2 (1 for a failed/partial run)."""
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request drowns the progress bar
    try:
        status = run(cfg, run_dir, source)
    except ClonebenchError as exc:
        log.error("%s", exc)
        print(f"clonebench: error: {exc}", file=sys.stderr)
        return 2
    print(f"run {status.value}: {run_dir}")
    return 0 if status == RunStatus.GENERATED else 1
