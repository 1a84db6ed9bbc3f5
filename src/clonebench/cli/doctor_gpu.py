"""``clonebench doctor --eval``'s checks of scoring on a GPU, each explained with its fix.

What breaks at the first CUDA run, checked before it: torch sees the GPU (and how many), the GPU's generation has
kernels in this torch build (``torch.cuda.get_arch_list()``: the CUDA 13 wheels have none for Volta, sm_70), the
driver runs the CUDA version torch was built for (>= 580 for CUDA 13), CTranslate2 (faster-whisper) sees the GPU,
has float16 there and finds the CUDA 12 cuBLAS it loads (evaluate/execution/cuda_env.py), and ffmpeg (openai-whisper's
audio reader) is on PATH. The libraries are arguments, so every failure and its message is tested with fakes.
"""

from __future__ import annotations

import shutil
from typing import Callable

from clonebench.evaluate.execution.cuda_env import (
    CUBLAS12_FIX,
    arch_supported,
    driver_cuda_version,
    driver_problem,
    driver_release,
    preload_cublas12,
)

TORCH_CU128 = ("pip install torch==2.11.0+cu128 torchaudio==2.11.0+cu128 --index-url "
               "https://download.pytorch.org/whl/cu128")


def check_driver(report, torch, release: str | None, driver_cuda: int | None) -> None:
    build = torch.version.cuda
    if release is None and driver_cuda is None:
        report.warn("no NVIDIA driver found (/proc/driver/nvidia/version, libcuda.so.1): scoring runs on CPU")
        return
    shown = f"driver {release or '?'}" + (f" (CUDA {driver_cuda // 1000}.{driver_cuda % 1000 // 10})"
                                          if driver_cuda else "")
    problem = driver_problem(build, release, driver_cuda)
    if build is None:
        report.ok(f"{shown} (this torch is a CPU-only build: see below)")
    elif problem:
        report.fail(f"{shown}: {problem}: torch cannot use the GPU",
                    "update the NVIDIA driver (>= 580 for CUDA 13), or install the torch build for CUDA 12.8, which "
                    f"runs on drivers >= 525: {TORCH_CU128}")
    else:
        report.ok(f"{shown} runs torch's CUDA {build}")


def check_torch_cuda(report, torch, device: str | None) -> list[int]:
    """The GPU indices to check further (empty when none is visible or wanted)."""
    wanted = device is not None and device.startswith("cuda")
    if not torch.cuda.is_available():
        if torch.version.cuda is None:
            what, fix = (f"torch {torch.__version__} is a CPU-only build",
                         "pip install torch==2.11.0 torchaudio==2.11.0 (PyPI's Linux wheels are CUDA 13 builds), or "
                         f"for drivers older than 580: {TORCH_CU128}")
        else:
            what, fix = (f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device",
                         "run on a GPU node; check CUDA_VISIBLE_DEVICES and the driver line above")
        if wanted:
            report.fail(what, fix)
        else:
            report.warn(f"{what}: scoring runs on CPU (slower); {fix}")
        return []
    count = torch.cuda.device_count()
    names = [torch.cuda.get_device_name(i) for i in range(count)]
    report.ok(f"torch {torch.__version__} sees {count} CUDA device(s): {names}")
    if wanted:
        index = int(device.split(":")[1])
        if index >= count:
            report.fail(f"{device} asked for, but torch sees {count} CUDA device(s)",
                        f"use cuda:0 .. cuda:{count - 1} (vc.evaluation.device), or check CUDA_VISIBLE_DEVICES")
            return []
        return [index]
    return list(range(count))


def check_arch(report, torch, index: int) -> None:
    major, minor = torch.cuda.get_device_capability(index)
    name = torch.cuda.get_device_name(index)
    archs = list(torch.cuda.get_arch_list())
    if arch_supported((major, minor), archs):
        report.ok(f"cuda:{index} {name} (sm_{major}{minor}) has kernels in this torch build ({' '.join(archs)})")
    else:
        report.fail(f"cuda:{index} {name} is sm_{major}{minor}, and this torch (CUDA {torch.version.cuda}) has kernels "
                    f"only for {' '.join(archs) or 'no GPU'}: it passes is_available() and fails at the first kernel",
                    "install a torch 2.11.0 build whose torch.cuda.get_arch_list() lists "
                    f"sm_{major}{minor} (a CUDA 12 wheel from https://download.pytorch.org/whl/), or score on "
                    "a newer GPU or the CPU (vc.evaluation.device=cpu)")


def check_ctranslate2(report, import_ct2: Callable, load_cublas: Callable) -> None:
    try:
        ct2 = import_ct2()
    except Exception as exc:  # noqa: BLE001 - reported with its fix
        report.fail(f"import ctranslate2 (faster-whisper): {type(exc).__name__}: {exc}", "pip install -e '.[eval]'")
        return
    count = ct2.get_cuda_device_count()
    if count == 0:
        report.fail(f"CTranslate2 {ct2.__version__} sees no CUDA device although torch does",
                    "CTranslate2 4.x is built for CUDA 12: it needs a driver >= 525 and a GPU it supports; "
                    "use evaluation.whisper.backend=openai_whisper, or faster-whisper on CPU")
        return
    try:
        types = set(ct2.get_supported_compute_types("cuda"))
    except Exception as exc:  # noqa: BLE001
        report.fail(f"CTranslate2 cannot query the GPU: {type(exc).__name__}: {exc}",
                    "check the driver line above; CTranslate2 4.x needs CUDA 12 support (driver >= 525)")
        return
    if "float16" in types:
        report.ok(f"CTranslate2 {ct2.__version__} sees {count} CUDA device(s), compute types {sorted(types)}")
    else:
        report.fail(f"CTranslate2 has no float16 on this GPU (compute types {sorted(types)}): faster-whisper's "
                    "compute_type=auto resolves to float16 on CUDA", "evaluation.whisper.compute_type=float32")
    try:
        report.ok(f"CUDA 12 cuBLAS for CTranslate2 loads: {load_cublas()}")
    except OSError as exc:
        report.fail(f"libcublas.so.12 does not load: faster-whisper on CUDA would fail at its first encode ({exc})",
                    CUBLAS12_FIX)


def check_ffmpeg(report, which: Callable = shutil.which) -> None:
    if which("ffmpeg"):
        report.ok("ffmpeg (openai-whisper reads audio with it)")
    else:
        report.fail("ffmpeg not found: openai-whisper (the reproduction WER backend) reads audio with the ffmpeg "
                    "command", "apt-get install ffmpeg (bash scripts/setup.sh does it)")


def _import_ct2():
    import ctranslate2

    return ctranslate2


def run_gpu_checks(report, device: str | None, torch_module=None, import_ct2: Callable = _import_ct2,
                   load_cublas: Callable = preload_cublas12, release: str | None | bool = False,
                   driver_cuda: int | None | bool = False, which: Callable = shutil.which) -> None:
    """Every GPU check, in the order a first CUDA run meets them (``release``/``driver_cuda``: False = read them)."""
    torch = torch_module
    if torch is None:
        import torch
    check_ffmpeg(report, which)
    release = driver_release() if release is False else release
    driver_cuda = driver_cuda_version() if driver_cuda is False else driver_cuda
    check_driver(report, torch, release, driver_cuda)
    indices = check_torch_cuda(report, torch, device)
    for index in indices:
        check_arch(report, torch, index)
    if indices:
        check_ctranslate2(report, import_ct2, load_cublas)
