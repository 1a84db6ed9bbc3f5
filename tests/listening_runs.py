"""Runs for the listening-test tests: generation runs of the eSpeak NG demo dataset against the stand-in Fish
server (real WAVs, real manifests), one per seed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from clonebench.runs.pipeline import run
from clonebench.standin import running_standin
from tests.conftest import compose


def generation_runs(tmp: Path, demo_dataset: Path, names: tuple[str, ...] = ("run_a", "run_b"),
                    evaluate: bool = False, first_seed: int = 41) -> dict[str, Path]:
    """``{name: run dir}``, run k seeded ``first_seed + k`` (the stand-in's seeded dither makes each seed's audio
    its own); with ``evaluate`` the runs are also scored (MCD only: the cheapest real metric)."""
    data = tmp / "data"
    if not data.exists():
        shutil.copytree(demo_dataset, data)
    out = {}
    with running_standin(max_lifetime=600) as server:
        for seed, name in enumerate(names, start=first_seed):
            phase = ["evaluation.metrics=[mcd]"] if evaluate else ["+vc.generate_only=true"]
            cfg = compose("demo", [f"paths.results_dir={tmp / 'results'}", f"run_name={name}",
                                   f"dataset.manifest_filename={data / 'metadata.json'}", f"dataset.root_path={data}",
                                   f"adversary.endpoint_url={server.url}/v1/tts", f"+seed={seed}",
                                   "adversary.reference_check=false", "adversary.retry_initial_delay=0.01", *phase])
            run(cfg, tmp / "results" / name, "test")
            out[name] = tmp / "results" / name
            assert json.loads((out[name] / "run_manifest.json").read_text())["counts"] == {"generated": 8}
    return out
