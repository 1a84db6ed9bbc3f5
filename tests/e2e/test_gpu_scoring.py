"""The commands of docs/gpu.md ("Scoring on a GPU"), run as printed on a machine without a GPU.

Local substitutions (nothing else changes):
- ``clonebench doctor --eval --device cuda``: as printed; without a GPU it must fail (exit 1) naming the missing
  CUDA device and the fix.
- ``python bench/gpu_check.py --pack .gpu_pack --out gpu_check.json``: ``--out`` points into the test's temporary
  folder, and ``--device cpu --clips 2 --whisper-size tiny-test --sections facts,ecapa,whisper,cublas12
  --budget-s 3000`` are appended (the CPU-runnable parts, small; the pool section is
  tests/integration/test_cpu_pool.py's). The packages are installed here, so ``--pack`` is not needed and not read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.e2e.test_readme_commands import readme_command

README_COMMANDS = ("clonebench doctor --eval --device cuda", "python bench/gpu_check.py --pack")
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1"}


def test_doctor_requires_the_gpu_it_is_asked_for():
    """On any host: CUDA_VISIBLE_DEVICES="" hides a GPU the host may have, so torch sees none, as on a CPU node."""
    command = readme_command("clonebench doctor --eval --device cuda").split()
    out = subprocess.run([sys.executable, "-m", "clonebench.cli.main", *command[1:]], capture_output=True, text=True,
                         env={**ENV, "CUDA_VISIBLE_DEVICES": ""}, timeout=600, cwd=REPO)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "FAIL  torch 2.11.0" in out.stdout and "sees no CUDA device" in out.stdout
    assert "fix: run on a GPU node; check CUDA_VISIBLE_DEVICES" in out.stdout


@pytest.mark.slow
def test_gpu_check_cpu_parts_run(tmp_path):
    command = readme_command("python bench/gpu_check.py --pack").split()
    assert command[:2] == ["python", "bench/gpu_check.py"]
    argv = [a if a != "gpu_check.json" else str(tmp_path / "gpu_check.json") for a in command[2:]]
    argv += ["--device", "cpu", "--clips", "2", "--whisper-size", "tiny-test", "--sections",
             "facts,ecapa,whisper,cublas12", "--budget-s", "3000"]
    out = subprocess.run([sys.executable, "bench/gpu_check.py", *argv], capture_output=True, text=True, env=ENV,
                         timeout=3000, cwd=REPO)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    result = json.loads((tmp_path / "gpu_check.json").read_text())
    ecapa, whisper = result["ecapa"], result["whisper"]
    assert ecapa["clonebench_vs_verify_files_same_flags"] == "max |d sim| 0"
    assert ecapa["second_pass_cache_hits"] == "2/2" and ecapa["batch_1_vs_8"] == "max |d sim| 0"
    assert ecapa["protocol"]["precision"] == "float32" and ecapa["execution"]["device"] == "cpu"
    assert whisper["clonebench_vs_transcribe_same_device"] == "2/2 identical"
    assert whisper["batch_1_vs_8"] == "2/2 identical" and whisper["second_pass_cache_hits"] == "2/2"
    assert "libcublas.so.12" in result["cublas12"] and "doctor" in result["facts"]
    assert not (REPO / "gpu_check.json").exists()


def test_the_pack_carries_every_package_the_check_needs():
    """bench/gpu_check_pack.sh downloads a distribution for every module bench/gpu_check.py needs on the box, and is
    valid bash (running it needs PyPI: done by hand, 40 MiB measured)."""
    import importlib.metadata
    import re

    sys.path.insert(0, str(REPO / "bench"))
    import _gpu_check_setup

    script = (REPO / "bench" / "gpu_check_pack.sh").read_text()
    assert subprocess.run(["bash", "-n", str(REPO / "bench" / "gpu_check_pack.sh")]).returncode == 0
    listed = " ".join(re.findall(r"(?s)(?:BINARY|SOURCE)=\((.*?)\)", script)).split()
    listed = {name.lower().replace("_", "-") for name in listed}
    owners = importlib.metadata.packages_distributions()
    for module in _gpu_check_setup.NEEDED:
        assert {d.lower().replace("_", "-") for d in owners[module]} & listed, module
