"""Shared fixtures: an eSpeak NG dataset, the stand-in Fish server on loopback, in-process runs."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
LIBRITTS16 = REPO / "reproduction" / "subsets" / "libritts16_v1" / "metadata.json"


@pytest.fixture(scope="session")
def demo_dataset(tmp_path_factory) -> Path:
    """A read-only-by-convention eSpeak NG dataset (4 speakers x 2 pairs); copy it before changing it."""
    if shutil.which("espeak-ng") is None:
        pytest.fail("espeak-ng is missing: run `bash scripts/setup.sh` (apt-get install espeak-ng)")
    from clonebench.demo.dataset import build_demo_dataset

    return build_demo_dataset(tmp_path_factory.mktemp("demo_data")).parent


@pytest.fixture
def dataset(demo_dataset, tmp_path) -> Path:
    """A private copy of the demo dataset that a test may damage."""
    target = tmp_path / "data"
    shutil.copytree(demo_dataset, target)
    return target


@pytest.fixture
def standin():
    from clonebench.standin import running_standin

    with running_standin(max_lifetime=600) as server:
        yield server


def compose(config_name: str = "demo", overrides: list[str] | None = None):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from clonebench.pipeline import register_resolvers

    register_resolvers()
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return hydra_compose(config_name=config_name, overrides=overrides or [])


def generate_run(tmp_path: Path, data: Path, url: str, *extra: str, run_dir: Path | None = None):
    """One in-process generate run against ``url``; returns (status, run_dir)."""
    from clonebench.pipeline import run

    run_dir = run_dir or tmp_path / "results" / "run"
    overrides = [f"paths.results_dir={tmp_path / 'results'}", f"dataset.manifest_filename={data / 'metadata.json'}",
                 f"dataset.root_path={data}", f"adversary.endpoint_url={url}/v1/tts", "+vc.generate_only=true",
                 "adversary.retry_initial_delay=0.01", "adversary.retry_max_delay=0.2", *extra]
    cfg = compose("demo", overrides)
    return run(cfg, run_dir, "configs/demo.yaml (test)"), run_dir


def load_manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "run_manifest.json").read_text())


def journal(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "sample_events.jsonl").read_text().splitlines() if line]


def files_under(root: Path) -> set[Path]:
    return {p for p in Path(root).rglob("*") if p.is_file()}


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch):
    """Loopback traffic must not be sent to a proxy from the environment."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    yield
    os.environ.pop("CLONEBENCH_TEST_KEY", None)
