"""``clonebench doctor --eval``'s GPU checks with faked libraries: each failure a first CUDA run would meet is
reported with its fix; versions compare by their public part; setup.sh keeps a local build of the pinned torch."""

from __future__ import annotations

import importlib.metadata
import re
from types import SimpleNamespace

import pytest

from clonebench.cli import doctor, doctor_gpu
from tests.conftest import REPO
from tests.unit.test_gpu_device import CU130, fake_torch


class Report:
    def __init__(self):
        self.lines = []

    def ok(self, what):
        self.lines.append(("ok", what, None))

    def warn(self, what):
        self.lines.append(("warn", what, None))

    def fail(self, what, fix):
        self.lines.append(("FAIL", what, fix))

    def failures(self):
        return [(what, fix) for level, what, fix in self.lines if level == "FAIL"]


def fake_ct2(count=1, types=("float32", "float16", "int8_float16"), error=None):
    def compute_types(device):
        if error:
            raise RuntimeError(error)
        return set(types)

    return lambda: SimpleNamespace(__version__="4.8.5", get_cuda_device_count=lambda: count,
                                   get_supported_compute_types=compute_types)


def check(torch, device=None, ct2=None, cublas="/x/nvidia/cublas/lib/libcublas.so.12", release="580.65.06",
          driver_cuda=13000, ffmpeg="/usr/bin/ffmpeg") -> Report:
    report = Report()

    def load_cublas():
        if isinstance(cublas, Exception):
            raise cublas
        return cublas

    doctor_gpu.run_gpu_checks(report, device, torch, ct2 or fake_ct2(), load_cublas, release, driver_cuda,
                              lambda name: ffmpeg)
    return report


def test_a_healthy_h200_passes_every_check():
    report = check(fake_torch(count=1))
    assert report.failures() == []
    text = " | ".join(what for _, what, _ in report.lines)
    assert "driver 580.65.06 (CUDA 13.0) runs torch's CUDA 13.0" in text
    assert "cuda:0 NVIDIA H200 (sm_90) has kernels in this torch build" in text
    assert "CTranslate2 4.8.5 sees 1 CUDA device(s), compute types ['float16', 'float32', 'int8_float16']" in text
    assert "CUDA 12 cuBLAS for CTranslate2 loads: /x/nvidia/cublas/lib/libcublas.so.12" in text


def test_volta_with_the_cuda13_wheel_fails_with_the_fix():
    (what, fix), = check(fake_torch(capability=(7, 0), archs=CU130)).failures()
    assert re.search(r"cuda:0 NVIDIA H200 is sm_70, and this torch \(CUDA 13.0\) has kernels only for sm_75 .* "
                     r"it passes is_available\(\) and fails at the first kernel", what)
    assert "torch.cuda.get_arch_list() lists sm_70" in fix and "vc.evaluation.device=cpu" in fix


@pytest.mark.parametrize("release, api, expected", [
    ("575.57.08", 12090, "driver 575.57.08 (CUDA 12.9): the driver supports CUDA 12.9, this torch is built for CUDA 13.0"),
    ("575.57.08", None, "driver 575.57.08: driver 575.57.08 is older than 580.65, the lowest that runs CUDA 13.x"),
])
def test_a_driver_too_old_for_cuda13(release, api, expected):
    (what, fix), = check(fake_torch(available=False), release=release, driver_cuda=api).failures()
    assert what == f"{expected}: torch cannot use the GPU"
    assert "(>= 580 for CUDA 13)" in fix and "torch==2.11.0+cu128" in fix


def test_no_gpu_is_a_warning_unless_a_gpu_is_asked_for():
    assert check(fake_torch(available=False), release=None, driver_cuda=None).failures() == []
    (what, fix), = check(fake_torch(available=False), device="cuda:0", release=None, driver_cuda=None).failures()
    assert what == "torch 2.11.0+cu130 (CUDA 13.0) sees no CUDA device" and "CUDA_VISIBLE_DEVICES" in fix
    (what, fix), = check(fake_torch(available=False, cuda=None), device="cuda:0", release=None,
                         driver_cuda=None).failures()
    assert what == "torch 2.11.0+cu130 is a CPU-only build" and "pip install torch==2.11.0" in fix


def test_an_index_torch_does_not_see():
    (what, fix), = check(fake_torch(count=2), device="cuda:2").failures()
    assert what == "cuda:2 asked for, but torch sees 2 CUDA device(s)" and "cuda:0 .. cuda:1" in fix


def test_ctranslate2_without_cuda12_cublas():
    (what, fix), = check(fake_torch(), cublas=OSError("libcublas.so.12: cannot open shared object file")).failures()
    assert what.startswith("libcublas.so.12 does not load: faster-whisper on CUDA would fail at its first encode")
    assert fix.startswith("install the CUDA 12 cuBLAS wheel that CTranslate2 loads: CLONEBENCH_CUDA=12 bash "
                          "scripts/setup.sh (or pip install -e '.[cuda12]')")


@pytest.mark.parametrize("ct2, what, fix", [
    (fake_ct2(count=0), "CTranslate2 4.8.5 sees no CUDA device although torch does", "driver >= 525"),
    (fake_ct2(types=("float32", "int8")), "CTranslate2 has no float16 on this GPU (compute types ['float32', 'int8'])",
     "evaluation.whisper.compute_type=float32"),
    (fake_ct2(error="CUDA driver version is insufficient"), "CTranslate2 cannot query the GPU: RuntimeError: CUDA "
     "driver version is insufficient", "CUDA 12 support (driver >= 525)"),
])
def test_ctranslate2_problems(ct2, what, fix):
    failures = check(fake_torch(), ct2=ct2).failures()
    assert failures[0][0].startswith(what) and fix in failures[0][1]


def test_ctranslate2_missing_and_ffmpeg_missing():
    def broken():
        raise ImportError("libctranslate2.so.4: cannot open shared object file")

    failures = check(fake_torch(), ct2=broken, ffmpeg=None).failures()
    assert failures[0] == ("ffmpeg not found: openai-whisper (the reproduction WER backend) reads audio with the "
                           "ffmpeg command", "apt-get install ffmpeg (bash scripts/setup.sh does it)")
    assert failures[1][0].startswith("import ctranslate2 (faster-whisper): ImportError") and len(failures) == 2


def test_doctor_compares_public_versions(monkeypatch, capsys):
    import torchaudio.functional  # noqa: F401 - imported before the versions are faked (it reads others')

    versions = {"torch": "2.11.0+cu128", "torchaudio": "2.11.0+cu128"}
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: versions.get(name) or real(name))
    report = doctor.Report()
    doctor._torch(report)
    assert report.failed == 0
    versions["torchaudio"] = "2.11.1"
    doctor._torch(report)
    assert report.failed == 1 and "torch 2.11.0+cu128 / torchaudio 2.11.1 (pinned pair: 2.11.0)" in capsys.readouterr().out


def _setup_guard() -> str:
    text = (REPO / "scripts" / "setup.sh").read_text()
    return text.split("<<'PY' >/dev/null 2>&1\n", 1)[1].split("\nPY\n", 1)[0]


@pytest.mark.parametrize("torch_version, extras, cublas, passes", [
    ("2.11.0+cu128", "http,eval", None, True),          # a local build of the pin: kept, no reinstall
    ("2.11.0", "http,eval", None, True),
    ("2.10.0+cu128", "http,eval", None, False),
    ("2.11.0", "http,eval,cuda12", None, False),         # CLONEBENCH_CUDA=12 without the cuBLAS wheel: install
    ("2.11.0", "http,eval,cuda12", "12.8.4.1", True),
])
def test_setup_guard_accepts_local_builds_of_the_pin(monkeypatch, torch_version, extras, cublas, passes):
    versions = {"torch": torch_version, "torchaudio": torch_version}
    if cublas:
        versions["nvidia-cublas-cu12"] = cublas
    real = importlib.metadata.version  # every other package as installed (setup's own pins hold here)

    def version(name):
        if name == "nvidia-cublas-cu12" and name not in versions:
            raise importlib.metadata.PackageNotFoundError(name)
        return versions[name] if name in versions else real(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    monkeypatch.setattr("sys.argv", ["-", extras])
    monkeypatch.chdir(REPO)
    if passes:
        exec(compile(_setup_guard(), "setup.sh", "exec"), {})
    else:
        with pytest.raises((AssertionError, importlib.metadata.PackageNotFoundError)):
            exec(compile(_setup_guard(), "setup.sh", "exec"), {})
