"""Check the installation: imports, the torch/torchaudio pair, eSpeak NG, and (with --eval) every scorer the shipped
configs can ask for, loaded from its sha256-valid assets (cli/doctor_assets.py, derived from the scorer registry),
ffmpeg, and scoring on a GPU (driver, GPU generation vs the torch build, CTranslate2's
CUDA and cuBLAS 12: cli/doctor_gpu.py; required with --device cuda[:N]). Prints the fix for each failure; exit 1
if anything failed. Versions are compared by their public part (2.11.0+cu128 is 2.11.0)."""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import shutil
import sys

from clonebench.evaluate.execution.cuda_env import public_version

CORE = {"hydra": "hydra-core", "omegaconf": "omegaconf", "numpy": "numpy", "soundfile": "soundfile",
        "tqdm": "tqdm", "matplotlib": "matplotlib", "httpx": "httpx[http extra]", "tenacity": "tenacity[http extra]",
        "ormsgpack": "ormsgpack[http extra]"}
EVAL = {"speechbrain": "speechbrain", "faster_whisper": "faster-whisper", "whisper": "openai-whisper",
        "jiwer": "jiwer", "speechmos": "speechmos", "pymcd": "pymcd", "onnxruntime": "onnxruntime"}
TORCH_PIN = "2.11.0"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--eval", action="store_true", help="also check the scorers' packages and model assets")
    parser.add_argument("--device", default=None,
                        help="with --eval: the scoring device to require (cuda, cuda:N); default: check the GPUs "
                             "torch sees, warn when there is none")


class Report:
    def __init__(self):
        self.failed = 0

    def ok(self, what: str) -> None:
        print(f"ok    {what}")

    def warn(self, what: str) -> None:
        print(f"warn  {what}")

    def fail(self, what: str, fix: str) -> None:
        self.failed += 1
        print(f"FAIL  {what}\n      fix: {fix}")


def _imports(report: Report, modules: dict[str, str], extra: str) -> None:
    for module, package in modules.items():
        try:
            importlib.import_module(module)
            report.ok(f"import {module}")
        except Exception as exc:  # noqa: BLE001 - any import failure is reported with its fix
            report.fail(f"import {module}: {type(exc).__name__}: {exc}", f"pip install -e '.[{extra}]' ({package})")


def _torch(report: Report) -> None:
    try:
        torch_version = importlib.metadata.version("torch")
        audio_version = importlib.metadata.version("torchaudio")
    except importlib.metadata.PackageNotFoundError as exc:
        report.fail(f"{exc.name} is not installed", f"pip install torch=={TORCH_PIN} torchaudio=={TORCH_PIN}")
        return
    if (public_version(torch_version), public_version(audio_version)) != (TORCH_PIN, TORCH_PIN):
        report.fail(f"torch {torch_version} / torchaudio {audio_version} (pinned pair: {TORCH_PIN})",
                    f"pip install torch=={TORCH_PIN} torchaudio=={TORCH_PIN}")
    try:
        import torch
        import torchaudio.functional  # noqa: F401
        report.ok(f"torch {torch.__version__} with torchaudio {audio_version}")
    except Exception as exc:  # noqa: BLE001
        report.fail(f"torchaudio does not load next to torch: {exc}", f"pip install torch=={TORCH_PIN} torchaudio=={TORCH_PIN}")
        return


def _ecapa_exact(report: Report) -> None:
    """ECAPA's one-thread exact path (evaluate/execution/exact_conv.py): on, or why not with its fix (scoring then keeps
    torch's own multi-thread path: slower, same protocol)."""
    from clonebench.evaluate.execution.exact_conv import unverified_reason

    try:
        reason = unverified_reason()
    except Exception as exc:  # noqa: BLE001 - reported with its fix
        reason = f"{type(exc).__name__}: {exc}; fix: pip install torch=={TORCH_PIN}"
    if reason is None:
        report.ok("ECAPA one-thread exact path (torch's convolution backend rule verified for this torch)")
    else:
        report.warn(f"ECAPA one-thread exact path off: {reason}")


def run(args: argparse.Namespace) -> int:
    report = Report()
    if sys.version_info < (3, 10):
        report.fail(f"Python {sys.version.split()[0]}", "use Python 3.10 or newer")
    else:
        report.ok(f"Python {sys.version.split()[0]}")
    _imports(report, CORE, "http")
    if shutil.which("espeak-ng"):
        report.ok("espeak-ng (stand-in server and demo data)")
    else:
        report.fail("espeak-ng not found (stand-in server, demo)", "apt-get install espeak-ng")
    _torch(report)
    if args.eval:
        from clonebench.cli.doctor_gpu import run_gpu_checks
        from clonebench.evaluate.execution.device import normalise_device

        from clonebench.cli.doctor_assets import check_scorer_assets

        _imports(report, EVAL, "eval")
        check_scorer_assets(report)
        _ecapa_exact(report)
        run_gpu_checks(report, normalise_device(args.device, "--device") if args.device else None)
    elif args.device:
        report.warn("--device is checked with --eval only")
    print(f"{report.failed} problem(s)" if report.failed else "all checks passed")
    return 1 if report.failed else 0
