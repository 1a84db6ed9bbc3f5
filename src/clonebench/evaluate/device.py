"""Where scoring runs, and the execution facts that scores depend on (part of every cache key)."""

from __future__ import annotations

import logging
import os
import platform

log = logging.getLogger(__name__)


def resolve_device(*choices: str | None) -> tuple[str, str | None]:
    """The first explicit choice, else ``cuda:0`` when CUDA is present, else CPU (with a warning)."""
    import torch

    for choice in choices:
        if choice:
            if choice.startswith("cuda") and not torch.cuda.is_available():
                from clonebench.errors import ConfigError
                raise ConfigError(f"evaluation device {choice} asked for, but torch sees no CUDA device "
                                  "(fix: vc.evaluation.device=cpu, or run where a GPU is visible)")
            return choice, None
    if torch.cuda.is_available():
        return "cuda:0", None
    warning = "no CUDA device: scoring on CPU (slower; scores are cached per device and never mixed)"
    log.warning(warning)
    return "cpu", warning


def execution(device: str) -> dict:
    """Device, torch/CUDA/cuDNN versions, GPU name and compute capability, CPU threads."""
    import torch

    facts = {"device": device, "torch": torch.__version__, "cuda": torch.version.cuda,
             "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
             "cpu_threads": torch.get_num_threads(), "machine": platform.machine(), "cpu_count": os.cpu_count()}
    if device.startswith("cuda"):
        index = torch.device(device).index or 0
        props = torch.cuda.get_device_properties(index)
        facts.update(gpu_name=props.name, compute_capability=f"{props.major}.{props.minor}",
                     gpu_memory_bytes=props.total_memory)
    return facts
