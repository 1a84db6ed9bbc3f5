#!/usr/bin/env python
"""Hydra entry point of clonebench.

    python run_vc.py --config-name ots_vc/clean/libritts/fish_audio_s2_ots [overrides]

Output: ``results/<run_name>/<YYYYMMDD-HHMMSS>-<8 hex>/`` (Hydra's run directory).
"""

from __future__ import annotations

import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent / "src"
if (SRC / "clonebench").is_dir() and str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))  # the code of this checkout, even where another checkout is installed

from clonebench.config.hydra_guard import guard_process

guard_process()  # before Hydra parses the command line: what it prints or writes is redacted from here on

import hydra  # noqa: E402
from hydra.core.hydra_config import HydraConfig  # noqa: E402
from hydra.types import RunMode  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from clonebench.config.compose import register_resolvers  # noqa: E402
from clonebench.runs.pipeline import main as pipeline_main  # noqa: E402

register_resolvers()


@hydra.main(version_base="1.3", config_path="configs", config_name="vc")
def main(cfg: DictConfig) -> int:
    guard_process()  # again: a multirun launcher may run this job in another process
    hydra_cfg = HydraConfig.get()
    source = f"configs/{hydra_cfg.job.config_name}.yaml with overrides {list(hydra_cfg.overrides.task)}"
    code = pipeline_main(cfg, Path(hydra_cfg.runtime.output_dir), source)
    if code and hydra_cfg.mode == RunMode.RUN:
        sys.exit(code)  # hydra.main discards return values; a multirun reports each job in its own log
    return code


if __name__ == "__main__":
    from clonebench.runs.sweep_outcome import finish

    try:
        main()
        status = 0
    except SystemExit as exc:  # Hydra exits 1 when a launcher raised (e.g. a cluster job that left no result)
        status = exc.code if isinstance(exc.code, int) else 1
    sys.exit(finish(status))  # a sweep (-m): one line per shard, non-zero if any is unfinished
