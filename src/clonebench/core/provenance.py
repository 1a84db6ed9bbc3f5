"""Provenance of a run: the harness (git, source hash), the environment, and the cloning service's files."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from clonebench.core.errors import ConfigError
from clonebench.core.hashing import HashCache, tree_sha256
from clonebench.core.paths import PACKAGE_DIR, REPO_DIR

TRACKED_PACKAGES = ("clonebench", "hydra-core", "omegaconf", "httpx", "tenacity", "ormsgpack", "soundfile", "numpy",
                    "tqdm", "datasets", "torch", "torchaudio", "speechbrain", "jiwer", "faster-whisper",
                    "ctranslate2", "openai-whisper", "speechmos", "onnxruntime", "pymcd", "scipy", "librosa")


def harness_source_sha256() -> str:
    """sha256 over the package's Python sources and the configs (sorted 'path<TAB>sha' lines)."""
    digest = hashlib.sha256()
    roots = [PACKAGE_DIR]
    configs = REPO_DIR / "configs"
    if configs.is_dir():
        roots.append(configs)
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".yaml") and "__pycache__" not in p.parts):
            rel = path.relative_to(root.parent).as_posix()
            digest.update(f"{rel}\t{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
    return digest.hexdigest()


def _git(*args: str) -> str | None:
    if shutil.which("git") is None or not (REPO_DIR / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "-C", str(REPO_DIR), *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def package_versions(names: tuple[str, ...] = TRACKED_PACKAGES, include_missing: bool = False) -> dict[str, str | None]:
    """Installed versions of ``names``; a missing package is left out, or recorded as None with ``include_missing``."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            if include_missing:
                versions[name] = None
    return versions


def hardware() -> dict[str, Any]:
    info: dict[str, Any] = {"machine": platform.machine(), "processor": platform.processor() or None,
                            "cpu_count": os.cpu_count()}
    try:
        info["memory_bytes"] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        pass
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20)
            info["gpus"] = [line.strip() for line in out.stdout.splitlines() if line.strip()]
        except (OSError, subprocess.TimeoutExpired):
            pass
    return info


def environment_provenance() -> dict[str, Any]:
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "harness": {
            "version": importlib.metadata.version("clonebench") if _installed("clonebench") else None,
            "git_commit": _git("rev-parse", "HEAD"),
            "git_dirty": None if status is None else bool(status),
            "source_sha256": harness_source_sha256(),
        },
        "python": sys.version,
        "executable": sys.executable,
        "platform": platform.platform(),
        "packages": package_versions(),
        "hardware": hardware(),
    }


# the scheduler facts a run records (manifest key "cluster"), read one by one: never the environment as a whole
CLUSTER_VARIABLES = {"job_id": "SLURM_JOB_ID", "array_job_id": "SLURM_ARRAY_JOB_ID",
                     "array_task_id": "SLURM_ARRAY_TASK_ID", "node": "SLURMD_NODENAME",
                     "partition": "SLURM_JOB_PARTITION", "submit_host": "SLURM_SUBMIT_HOST",
                     "restart_count": "SLURM_RESTART_COUNT"}
MAX_CLUSTER_VALUE = 128  # a longer value is cut: these are ids and host names


def cluster_provenance(environ=os.environ) -> dict[str, str] | None:
    """Where a cluster job ran: SLURM's job id, array job and task, node, partition, submit host and restart count
    (None outside a SLURM job). Only these named variables are read."""
    if not environ.get("SLURM_JOB_ID"):
        return None
    found = {key: environ[name][:MAX_CLUSTER_VALUE] for key, name in CLUSTER_VARIABLES.items() if environ.get(name)}
    return {"scheduler": "slurm", **found}


def _installed(name: str) -> bool:
    try:
        importlib.metadata.version(name)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def _git_head(path: Path) -> str | None:
    head = path / ".git" / "HEAD"
    if not head.is_file():
        return None
    ref = head.read_text().strip()
    if ref.startswith("ref: "):
        target = path / ".git" / ref[5:]
        if target.is_file():
            return target.read_text().strip()
        packed = path / ".git" / "packed-refs"
        if packed.is_file():
            for line in packed.read_text().splitlines():
                if line.endswith(" " + ref[5:]):
                    return line.split()[0]
        return None
    return ref


def service_provenance(code: Path | None, checkpoint: Path | None, codec: Path | None, cache: HashCache) -> dict:
    """sha256 trees of the server's source files, every checkpoint file and the codec checkpoint."""
    out: dict[str, Any] = {}
    for key, path, sources_only in (("service_code", code, True), ("service_checkpoint", checkpoint, False),
                                    ("service_codec_checkpoint", codec, False)):
        if path is None:
            out[key] = None
            continue
        if not path.exists():
            raise ConfigError(f"adversary.{key}_path={path} does not exist (fix the path or drop the key)")
        tree = tree_sha256(path, cache, sources_only=sources_only).as_dict()
        if key == "service_code":
            tree["git_commit"] = _git_head(path)
        out[key] = tree
    return out
