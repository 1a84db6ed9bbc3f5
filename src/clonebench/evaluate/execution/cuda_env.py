"""The CUDA stack under the GPU scorers: the driver, the GPU generation against a torch build's kernels, and the
CUDA 12 cuBLAS that CTranslate2 (faster-whisper) loads.

torch 2.11.0 from PyPI on Linux x86_64 is the CUDA 13.0 build: it needs a driver that speaks CUDA 13 (release
>= 580) and carries no kernels for Volta (sm_70). CTranslate2 4.x is built against CUDA 12: its library
``dlopen``s ``libcublas.so.12`` (measured on the 4.8.5 wheel: the only CUDA libraries it names are
``libcublas.so.12`` and ``libcuda.so.1``; no cuDNN), which torch's CUDA 13 wheels do not provide. The supported
fix is the ``cuda12`` extra (``nvidia-cublas-cu12``), whose libraries :func:`preload_cublas12` loads by path,
before CTranslate2 looks for them (a library already loaded under a soname satisfies a later ``dlopen`` of that
name). Nothing here needs a GPU: every function reads files, libraries or the strings torch reports, so the
checks are testable with fakes.
"""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
import sys
from pathlib import Path

# lowest Linux driver release for a CUDA major version (NVIDIA's CUDA compatibility tables: minor-version
# compatibility lets any driver of these releases run every toolkit of the same major version)
MIN_DRIVER = {11: (450, 80), 12: (525, 60), 13: (580, 65)}
CUBLAS12 = ("libcublasLt.so.12", "libcublas.so.12")  # Lt first: libcublas.so.12 needs it
CUBLAS12_FIX = ("install the CUDA 12 cuBLAS wheel that CTranslate2 loads: CLONEBENCH_CUDA=12 bash scripts/setup.sh "
                "(or pip install -e '.[cuda12]'), or put a CUDA 12 toolkit's lib64 on LD_LIBRARY_PATH")
_loaded: dict[str, str] = {}


def public_version(version: str) -> str:
    """PEP 440 public part: ``2.11.0+cu128`` -> ``2.11.0`` (a local build of the pinned release is that release)."""
    return str(version).split("+", 1)[0].strip()


def parse_release(text: str) -> tuple[int, ...] | None:
    """``580.65.06`` -> (580, 65, 6); None when there is no dotted number."""
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    return tuple(int(g) for g in match.groups() if g is not None) if match else None


def driver_release(proc: Path = Path("/proc/driver/nvidia/version")) -> str | None:
    """The NVIDIA kernel driver's release (``580.65.06``), from /proc, else nvidia-smi; None without a driver."""
    try:
        text = proc.read_text(errors="replace")
        match = re.search(r"Kernel Module.*?\s(\d+\.\d+(?:\.\d+)?)\s", text)
        if match:
            return match.group(1)
    except OSError:
        pass
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20)
            first = out.stdout.strip().splitlines()
            return first[0].strip() if out.returncode == 0 and first else None
        except (OSError, subprocess.TimeoutExpired):
            return None
    return None


def driver_cuda_version() -> int | None:
    """The CUDA version the driver supports (``cuDriverGetVersion``: 13000 = 13.0); None without libcuda."""
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
        value = ctypes.c_int(0)
        if libcuda.cuDriverGetVersion(ctypes.byref(value)) != 0:
            return None
        return value.value
    except (OSError, AttributeError):
        return None


def driver_problem(build_cuda: str | None, release: str | None, driver_cuda: int | None) -> str | None:
    """Why the driver cannot run a torch built for CUDA ``build_cuda`` (``"13.0"``); None when it can."""
    if not build_cuda:
        return None
    major = int(str(build_cuda).split(".")[0])
    if driver_cuda is not None and driver_cuda // 1000 < major:
        return (f"the driver supports CUDA {driver_cuda // 1000}.{driver_cuda % 1000 // 10}, this torch is built for "
                f"CUDA {build_cuda}")
    need = MIN_DRIVER.get(major)
    have = parse_release(release or "")
    if need and have and have[:2] < need:
        return f"driver {release} is older than {need[0]}.{need[1]}, the lowest that runs CUDA {major}.x"
    return None


def _arch(entry: str) -> tuple[str, int, int, bool] | None:
    """``sm_86`` -> ("sm", 8, 6, False); ``sm_90a`` -> ("sm", 9, 0, True); ``compute_120`` -> ("compute", 12, 0, False)."""
    match = re.fullmatch(r"(sm|compute)_(\d+)(\d)([a-z]?)", entry.strip())
    if not match:
        return None
    return match.group(1), int(match.group(2)), int(match.group(3)), bool(match.group(4))


def arch_supported(capability: tuple[int, int], arch_list: list[str]) -> bool:
    """Whether a GPU of ``capability`` can run a build with ``arch_list`` (``torch.cuda.get_arch_list()``): a cubin
    of the same major and no higher minor, or PTX (``compute_XY``) of no higher version, which the driver JITs.
    Arch-specific cubins (``sm_90a``) run only on that exact GPU."""
    major, minor = capability
    for entry in arch_list:
        parsed = _arch(entry)
        if parsed is None:
            continue
        kind, a_major, a_minor, specific = parsed
        if kind == "sm" and (a_major, a_minor) == (major, minor):
            return True
        if kind == "sm" and not specific and a_major == major and a_minor <= minor:
            return True
        if kind == "compute" and (a_major, a_minor) <= (major, minor):
            return True
    return False


def cublas12_candidates() -> list[Path]:
    """Folders that may hold the ``nvidia-cublas-cu12`` wheel's libraries (``site-packages/nvidia/cublas/lib``)."""
    roots = []
    for entry in sys.path:
        folder = Path(entry or ".") / "nvidia" / "cublas" / "lib"
        if folder not in roots and (folder / CUBLAS12[1]).is_file():
            roots.append(folder)
    return roots


def preload_cublas12() -> str:
    """Load CUDA 12 cuBLAS (``libcublasLt.so.12`` then ``libcublas.so.12``) with global symbols, by path from the
    ``cuda12`` extra's wheel when installed, else by soname (a system CUDA 12 toolkit). Returns what was loaded
    (a path or the soname); raises OSError naming the fix when neither loads. Idempotent."""
    if "libcublas.so.12" in _loaded:
        return _loaded["libcublas.so.12"]
    problems = []
    for folder in cublas12_candidates():
        try:
            for name in CUBLAS12:
                ctypes.CDLL(str(folder / name), mode=ctypes.RTLD_GLOBAL)
            _loaded["libcublas.so.12"] = str(folder / CUBLAS12[1])
            return _loaded["libcublas.so.12"]
        except OSError as exc:
            problems.append(f"{folder}: {exc}")
    try:
        for name in CUBLAS12:
            ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        _loaded["libcublas.so.12"] = CUBLAS12[1]
        return CUBLAS12[1]
    except OSError as exc:
        problems.append(str(exc))
    raise OSError(f"CTranslate2 (faster-whisper) on CUDA needs libcublas.so.12 (CUDA 12 cuBLAS) and none loads "
                  f"({'; '.join(problems)}); fix: {CUBLAS12_FIX}")
