"""Precision on a GPU: what the GPU scorers compute in, decided once and recorded.

torch's defaults on CUDA compute cuDNN convolutions (ECAPA's TDNN layers, torchaudio's resampling, the emotion and
UTMOS encoders) in TF32, a 10-bit-mantissa format, while matmuls stay IEEE float32; cuDNN also picks
convolution algorithms per call unless told to be deterministic. Decision: while a scorer loads and scores on a
GPU, clonebench forces IEEE float32 for every fp32 matmul, convolution and RNN (``fp32_precision = "ieee"``),
turns cuDNN's autotuner off and makes its algorithm choice deterministic (:func:`policy`), then restores the
process's flags. So a float32 scorer computes in float32 on a GPU as on a CPU, the same call gives the same bits
from run to run, and its numbers equal the reference call (``verify_files``, ``transcribe``) made under the same
flags on the same device, which ``bench/gpu_check.py`` checks, with the TF32-on difference beside it.

Where a reference itself computes in half precision (openai-whisper's ``fp16=True`` on CUDA, faster-whisper's
float16 compute type), the scorer does the same: ``Scorer.precision()`` says so, it enters the scorer's
``protocol`` (``clonebench compare`` / ``compare-check`` refuse to pair float16 with float32 scores unless told),
and the flags below enter the execution record and fingerprint on a GPU. fp16 GEMM reductions keep torch's
default (reduced-precision reduction allowed), as the reference call runs them.
"""

from __future__ import annotations

import contextlib
import os

# the fp32 backends whose TF32 use this policy turns off (torch >= 2.9's fp32_precision API)
IEEE_BACKENDS = ("cuda.matmul", "cudnn.conv", "cudnn.rnn")
# CTranslate2 environment variables that change its numbers (read from its library); recorded when set
CT2_NUMERIC_ENV = ("CT2_CUDA_ALLOW_FP16", "CT2_CUDA_ALLOW_BF16", "CT2_CUDA_TRUE_FP16_GEMM", "CT2_FORCE_CPU_ISA",
                   "CT2_USE_MKL", "CT2_PACKED_GEMM")


def _backend(torch, dotted: str):
    node = torch.backends
    for part in dotted.split("."):
        node = getattr(node, part)
    return node


def cuda_flags(torch_module=None) -> dict:
    """The flags that decide a GPU scorer's float arithmetic, as torch reports them now."""
    torch = torch_module
    if torch is None:
        import torch
    flags = {f"{name}.fp32_precision": _backend(torch, name).fp32_precision for name in IEEE_BACKENDS}
    matmul = torch.backends.cuda.matmul
    flags.update({"cudnn.benchmark": bool(torch.backends.cudnn.benchmark),
                  "cudnn.deterministic": bool(torch.backends.cudnn.deterministic),
                  "cuda.matmul.allow_fp16_reduced_precision_reduction":
                      bool(matmul.allow_fp16_reduced_precision_reduction),
                  "cuda.matmul.allow_bf16_reduced_precision_reduction":
                      bool(matmul.allow_bf16_reduced_precision_reduction)})
    return flags


def ctranslate2_env() -> dict:
    """The CTranslate2 variables that change its numbers, as set in this process's environment."""
    return {name: os.environ[name] for name in CT2_NUMERIC_ENV if name in os.environ}


@contextlib.contextmanager
def policy(device: str, tf32: bool = False, torch_module=None):
    """On a CUDA ``device``: IEEE float32 (or TF32 with ``tf32=True``, for comparisons only) for matmuls,
    convolutions and RNNs, cuDNN autotuner off and deterministic algorithms; the previous flags come back after.
    On a CPU: nothing changes (the flags are CUDA's)."""
    if not str(device).startswith("cuda"):
        yield
        return
    torch = torch_module
    if torch is None:
        import torch
    saved = {name: _backend(torch, name).fp32_precision for name in IEEE_BACKENDS}
    saved_cudnn = (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic)
    try:
        for name in IEEE_BACKENDS:
            _backend(torch, name).fp32_precision = "tf32" if tf32 else "ieee"
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
        yield
    finally:
        for name, value in saved.items():
            _backend(torch, name).fp32_precision = value
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = saved_cudnn
