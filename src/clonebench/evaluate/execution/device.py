"""Where scoring runs, and the execution facts that scores depend on (part of every cache key).

A device is named one way only: ``cpu`` or ``cuda:N`` (``cuda`` is ``cuda:0``), so ``cuda`` and ``cuda:0`` share
fingerprints and caches; ``cuda:N`` is checked against ``torch.cuda.device_count()`` before any model loads.

Execution facts are split in two. The fingerprinted ones decide numbers: device, torch/CUDA/cuDNN versions, the
machine; on a GPU its name, compute capability, the driver release and the precision flags in force
(evaluate/execution/precision.py); on a CPU the thread count, for the scorers whose numbers depend on it
(``Scorer.threads_change_numbers``; tests/integration/test_thread_dependence.py checks that exactly those carry it). The recorded-only
ones do not: core count, GPU memory, and the thread count wherever the numbers do not depend on it (the GPU
scorers on a GPU, whose CPU-side audio features are thread-independent; DNSMOS and MCD, which compute on fixed
single threads), so GPU shards scored on nodes with different core counts merge.
"""

from __future__ import annotations

import logging
import os
import platform

from clonebench.core.errors import ConfigError

log = logging.getLogger(__name__)


def normalise_device(choice: str, key: str = "vc.evaluation.device") -> str:
    """``cpu``, ``cuda`` -> ``cuda:0``, ``cuda:N``; anything else is a ConfigError naming ``key``."""
    text = str(choice).strip().lower()
    if text == "cpu":
        return "cpu"
    if text == "cuda":
        return "cuda:0"
    kind, sep, index = text.partition(":")
    if kind == "cuda" and sep and index.isdigit():
        return f"cuda:{int(index)}"
    raise ConfigError(f"{key}={choice!r} is not a scoring device; use cpu, cuda or cuda:N (N = 0 .. number of "
                      "visible GPUs - 1)")


def check_cuda_device(device: str, torch_module=None) -> None:
    """Raise a ConfigError unless torch sees the GPU ``cuda:N`` names (before anything is loaded on it)."""
    torch = torch_module
    if torch is None:
        import torch
    if not device.startswith("cuda"):
        return
    if not torch.cuda.is_available():
        raise ConfigError(f"evaluation device {device} asked for, but torch sees no CUDA device (torch "
                          f"{torch.__version__}, built for CUDA {torch.version.cuda}); fix: vc.evaluation.device=cpu, "
                          "or run where a GPU is visible (clonebench doctor --eval --device cuda explains why not)")
    count = torch.cuda.device_count()
    index = int(device.split(":")[1])
    if index >= count:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        raise ConfigError(f"evaluation device {device} asked for, but torch sees {count} CUDA device(s) "
                          f"(cuda:0 .. cuda:{count - 1}{'; CUDA_VISIBLE_DEVICES=' + visible if visible else ''}); "
                          f"fix: vc.evaluation.device=cuda:{count - 1} or lower")


def resolve_device(*choices: str | None) -> tuple[str, str | None]:
    """The first explicit choice (normalised, checked), else ``cuda:0`` when CUDA is present, else CPU (warned)."""
    import torch

    for choice in choices:
        if choice:
            device = normalise_device(choice)
            check_cuda_device(device, torch)
            return device, None
    if torch.cuda.is_available():
        return "cuda:0", None
    warning = "no CUDA device: scoring on CPU (slower; scores are cached per device and never mixed)"
    log.warning(warning)
    return "cpu", warning


def execution(device: str, threads: int | None, torch_module=None) -> tuple[dict, dict]:
    """(fingerprinted facts, recorded-only facts) of scoring on ``device``. ``threads``: the CPU thread count the
    scorer's numbers depend on, or None when they do not (then it is only recorded)."""
    torch = torch_module
    if torch is None:
        import torch
    from clonebench.evaluate.execution.cuda_env import driver_release
    from clonebench.evaluate.execution.precision import cuda_flags

    facts = {"device": device, "torch": torch.__version__, "cuda": torch.version.cuda,
             "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
             "machine": platform.machine()}
    host = {"cpu_threads": torch.get_num_threads(), "cpu_count": os.cpu_count()}
    if threads is not None:
        facts["cpu_threads"] = threads
    if device.startswith("cuda"):
        index = int(device.split(":")[1])
        props = torch.cuda.get_device_properties(index)
        facts.update(gpu_name=props.name, compute_capability=f"{props.major}.{props.minor}",
                     driver=driver_release(), precision_flags=cuda_flags(torch))
        host.update(gpu_memory_bytes=props.total_memory)
    return facts, host
