"""Scoring devices and the CUDA stack, without a GPU: device names, index checks against the GPUs torch sees, the
driver a torch build needs, a GPU's generation against a build's kernels, cuBLAS 12, public versions, and the
execution facts that enter (or stay out of) a scorer's fingerprint."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from clonebench.core.errors import ConfigError
from clonebench.evaluate.execution import cuda_env, device


def fake_torch(count: int = 1, available: bool = True, cuda: str | None = "13.0", threads: int = 16,
               capability=(9, 0), archs=("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120")):
    backends = SimpleNamespace(
        cuda=SimpleNamespace(matmul=SimpleNamespace(fp32_precision="ieee", allow_fp16_reduced_precision_reduction=True,
                                                    allow_bf16_reduced_precision_reduction=True)),
        cudnn=SimpleNamespace(conv=SimpleNamespace(fp32_precision="ieee"), rnn=SimpleNamespace(fp32_precision="ieee"),
                              benchmark=False, deterministic=True, is_available=lambda: True, version=lambda: 91900))
    props = SimpleNamespace(name="NVIDIA H200", major=capability[0], minor=capability[1], total_memory=150_000_000_000)
    return SimpleNamespace(
        __version__="2.11.0+cu130", version=SimpleNamespace(cuda=cuda), backends=backends,
        get_num_threads=lambda: threads,
        cuda=SimpleNamespace(is_available=lambda: available, device_count=lambda: count,
                             get_device_properties=lambda i: props, get_device_capability=lambda i: capability,
                             get_device_name=lambda i: props.name, get_arch_list=lambda: list(archs)))


@pytest.mark.parametrize("given, named", [("cpu", "cpu"), ("cuda", "cuda:0"), ("CUDA:1", "cuda:1"), (" cuda:02 ", "cuda:2")])
def test_device_names_are_normalised(given, named):
    assert device.normalise_device(given) == named


@pytest.mark.parametrize("given", ["gpu", "cuda:", "cuda:x", "mps", "cuda:-1", ""])
def test_other_device_names_are_refused_naming_the_key(given):
    with pytest.raises(ConfigError, match=r"evaluation.device=.* is not a scoring device; use cpu, cuda or cuda:N"):
        device.normalise_device(given, "evaluation.device")


def test_a_gpu_index_torch_does_not_see_is_refused_before_loading(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    with pytest.raises(ConfigError, match=r"cuda:1 asked for, but torch sees 1 CUDA device\(s\) \(cuda:0 \.\. cuda:0; "
                                          r"CUDA_VISIBLE_DEVICES=3\); fix: vc.evaluation.device=cuda:0 or lower"):
        device.check_cuda_device("cuda:1", fake_torch(count=1))
    device.check_cuda_device("cuda:1", fake_torch(count=2))  # seen: no error
    with pytest.raises(ConfigError, match=r"torch sees no CUDA device \(torch 2.11.0\+cu130, built for CUDA 13.0\)"):
        device.check_cuda_device("cuda:0", fake_torch(available=False))
    device.check_cuda_device("cpu", fake_torch(available=False))


def test_resolve_device_here(caplog, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # this host as a machine without a GPU, on any host
    assert device.resolve_device(None, "cpu") == ("cpu", None)
    with pytest.raises(ConfigError, match="torch sees no CUDA device"):
        device.resolve_device("cuda")
    chosen, warning = device.resolve_device(None)
    assert chosen == "cpu" and warning.startswith("no CUDA device")


def test_settings_normalise_the_device_and_name_the_key():
    from clonebench.config.settings import read_settings
    from tests.conftest import compose

    assert read_settings(compose("demo", ["+vc.evaluation.device=cuda"]), "demo").evaluation.device == "cuda:0"
    assert read_settings(compose("demo", ["evaluation.device=CUDA:3"]), "demo").evaluation.device == "cuda:3"
    with pytest.raises(ConfigError, match=r"demo: vc.evaluation.device='gpu' is not a scoring device"):
        read_settings(compose("demo", ["+vc.evaluation.device=gpu"]), "demo")
    settings = read_settings(compose("demo", ["evaluation.cpu_workers=0"]), "demo")
    assert settings.evaluation.cpu_workers == 0


def test_public_versions_and_driver_releases(tmp_path):
    assert cuda_env.public_version("2.11.0+cu128") == "2.11.0" == cuda_env.public_version("2.11.0")
    assert cuda_env.parse_release("580.65.06") == (580, 65, 6) and cuda_env.parse_release("none") is None
    proc = tmp_path / "version"
    proc.write_text("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  "
                    "(dvs-builder@U16-I3-B03-4-3)  Sun Jul 27 06:54:38 UTC 2025\nGCC version:  gcc version 12.3.0\n")
    assert cuda_env.driver_release(proc) == "580.65.06"
    proc.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\n")
    assert cuda_env.driver_release(proc) == "535.183.01"


@pytest.mark.parametrize("build, release, api, problem", [
    ("13.0", "580.65.06", 13000, None),
    ("13.0", "575.57.08", 12090, "the driver supports CUDA 12.9, this torch is built for CUDA 13.0"),
    ("13.0", "575.57.08", None, "driver 575.57.08 is older than 580.65, the lowest that runs CUDA 13.x"),
    ("12.8", "535.183.01", 12020, None),  # minor-version compatibility: any 12.x driver >= 525
    ("12.8", "470.82.01", 11040, "the driver supports CUDA 11.4, this torch is built for CUDA 12.8"),
    (None, None, None, None),  # a CPU build needs no driver
])
def test_driver_against_the_torch_build(build, release, api, problem):
    assert cuda_env.driver_problem(build, release, api) == problem


CU130 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]


@pytest.mark.parametrize("capability, archs, ok", [
    ((9, 0), CU130, True),           # H100 / H200
    ((7, 0), CU130, False),          # V100: passes is_available, no kernels
    ((8, 9), CU130, True),           # L4 / 4090: sm_86 cubins run on 8.9
    ((7, 0), ["sm_50", "sm_60", "sm_70", "sm_80"], True),
    ((9, 0), ["sm_80", "sm_90a"], True),   # the arch-specific cubin of that very GPU
    ((10, 0), ["sm_90a"], False),          # ... and of no other
    ((12, 1), ["sm_90", "compute_120"], True),  # PTX, JIT-compiled by the driver
    ((8, 0), ["sm_90", "compute_90"], False),
])
def test_gpu_generation_against_the_kernels_of_a_build(capability, archs, ok):
    assert cuda_env.arch_supported(capability, archs) is ok


def test_cublas12_that_does_not_load_names_the_fix(tmp_path, monkeypatch):
    fake = tmp_path / "nvidia" / "cublas" / "lib"
    fake.mkdir(parents=True)
    for name in cuda_env.CUBLAS12:
        (fake / name).write_bytes(b"not a library")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    monkeypatch.setattr(cuda_env, "_loaded", {})
    monkeypatch.setattr(cuda_env.ctypes, "CDLL", _refuse_cublas)
    assert cuda_env.cublas12_candidates() == [fake]
    with pytest.raises(OSError, match=r"needs libcublas.so.12 .*fix: install the CUDA 12 cuBLAS wheel that CTranslate2 "
                                      r"loads: CLONEBENCH_CUDA=12 bash scripts/setup.sh"):
        cuda_env.preload_cublas12()


def _refuse_cublas(name, mode=0):
    raise OSError(f"{name}: cannot open shared object file")


def test_cublas12_is_loaded_by_path_before_the_soname(tmp_path, monkeypatch):
    fake = tmp_path / "nvidia" / "cublas" / "lib"
    fake.mkdir(parents=True)
    for name in cuda_env.CUBLAS12:
        (fake / name).write_bytes(b"")
    loaded = []
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    monkeypatch.setattr(cuda_env, "_loaded", {})
    monkeypatch.setattr(cuda_env.ctypes, "CDLL", lambda name, mode=0: loaded.append((name, mode)))
    assert cuda_env.preload_cublas12() == str(fake / "libcublas.so.12")
    assert loaded == [(str(fake / "libcublasLt.so.12"), cuda_env.ctypes.RTLD_GLOBAL),
                      (str(fake / "libcublas.so.12"), cuda_env.ctypes.RTLD_GLOBAL)]
    assert cuda_env.preload_cublas12() == str(fake / "libcublas.so.12") and len(loaded) == 2  # once


def test_gpu_execution_facts_keep_threads_and_memory_out_of_the_fingerprint(monkeypatch):
    monkeypatch.setattr(cuda_env, "driver_release", lambda: "580.65.06")
    facts, host = device.execution("cuda:0", None, fake_torch(threads=16))
    assert facts["gpu_name"] == "NVIDIA H200" and facts["compute_capability"] == "9.0"
    assert facts["driver"] == "580.65.06" and facts["precision_flags"]["cudnn.conv.fp32_precision"] == "ieee"
    assert "cpu_threads" not in facts and "cpu_count" not in facts and "gpu_memory_bytes" not in facts
    assert host["cpu_threads"] == 16 and host["gpu_memory_bytes"] == 150_000_000_000
    assert device.execution("cuda:0", None, fake_torch(threads=4))[0] == facts  # another core count: same facts
    on_cpu, _ = device.execution("cpu", 2, fake_torch())
    assert on_cpu["cpu_threads"] == 2 and "gpu_name" not in on_cpu and "precision_flags" not in on_cpu
