"""Sharding and merging: 1, 2 and 3 shards merge into the same run; gaps and overlaps are refused; Hydra's
submitit_local and joblib launchers run the shards as a real multirun."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clonebench.core.errors import ClonebenchError
from clonebench.data.selection import shard_members
from clonebench.runs.merge import merge
from clonebench.runs.pipeline import run
from clonebench.runs.status import summarise
from clonebench.standin import running_standin
from tests.conftest import REPO, compose

COMMON = ["adversary.reference_check=false", "evaluation.metrics=[sim]", "evaluation.ecapa.allow_hub=false",
          "adversary.retry_initial_delay=0.01"]
# what legitimately differs between merges of separate runs: when things happened and where they were written
VOLATILE_SAMPLE_FIELDS = ("synthesis_time_s",)


def run_shards(tmp, data, url, count, sweep_name):
    sweep = tmp / sweep_name
    for index in range(count):
        cfg = compose("demo", [f"paths.results_dir={tmp / 'results'}", f"dataset.manifest_filename={data / 'metadata.json'}",
                               f"dataset.root_path={data}", f"adversary.endpoint_url={url}/v1/tts",
                               f"vc.shard.count={count}", f"vc.shard.index={index}", *COMMON])
        run(cfg, sweep / str(index), "test")
    return sweep


def comparable(manifest: dict) -> dict:
    out = json.loads(json.dumps(manifest))
    out.pop("shards")  # each shard's own record (folder, index, timestamps, provenance)
    for row in out["samples"]:
        for key in VOLATILE_SAMPLE_FIELDS:
            row.pop(key, None)
    return out


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory, demo_dataset):
    tmp = tmp_path_factory.mktemp("shards")
    with running_standin(max_lifetime=600) as server:
        return {count: run_shards(tmp, demo_dataset, server.url, count, f"sweep{count}") for count in (1, 2, 3)}


def test_shards_are_balanced_total_and_stable():
    """Sorted-id blocks: sizes differ by at most one (a hash modulo gave 5/0/1/2 on 8 pairs), every id in exactly
    one shard, and the same ids (in any order) give the same shards."""
    import hashlib
    import random

    ids = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(8)]
    for count in (1, 2, 3, 4, 5, 8):
        shards = [shard_members(ids, count, index) for index in range(count)]
        assert sorted(len(s) for s in shards)[-1] - sorted(len(s) for s in shards)[0] <= 1
        assert set().union(*shards) == set(ids) and sum(map(len, shards)) == len(ids)
        shuffled = random.Random(count).sample(ids, len(ids))
        assert [shard_members(shuffled, count, index) for index in range(count)] == shards
    assert [len(shard_members(ids, 4, i)) for i in range(4)] == [2, 2, 2, 2]


def test_merges_of_1_2_3_shards_are_identical(sweeps):
    merged = {count: merge(sweep) for count, sweep in sweeps.items()}
    manifests = {c: comparable(json.loads((d / "run_manifest.json").read_text())) for c, d in merged.items()}
    assert manifests[1]["status"] == "generated" and len(manifests[1]["samples"]) == 8
    assert manifests[1] == manifests[2] == manifests[3]
    for d in merged.values():  # the merged journal ends like a finished run's, so status reads it as one
        assert summarise(d)["status"] == "generated"
    metrics = {c: json.loads((d / "metrics.json").read_text()) for c, d in merged.items()}
    assert metrics[1] == metrics[2] == metrics[3] and metrics[1]["metrics"]["sim"]["n_valid"] == 8
    csvs = {c: (d / "generation_sample_metrics.csv").read_text().replace(str(d), "<run>") for c, d in merged.items()}
    assert csvs[2].count("\n") == 9
    assert len(list((merged[3] / "generated_audio").rglob("*.wav"))) == 8
    shard_sizes = [len(json.loads((d / "run_manifest.json").read_text())["samples"]) for d in sorted(sweeps[3].iterdir())
                   if d.name != "merged"]
    assert sum(shard_sizes) == 8 and len(shard_sizes) == 3


def test_missing_and_overlapping_shards_are_refused(sweeps, tmp_path):
    partial = tmp_path / "partial"
    shutil.copytree(sweeps[3] / "0", partial / "0")
    shutil.copytree(sweeps[3] / "1", partial / "1")
    with pytest.raises(ClonebenchError, match="shards miss") as refused:
        merge(partial)
    assert "absent: [2]" in str(refused.value)
    assert "shard 2: python run_vc.py" in str(refused.value) and "vc.shard.index=2 " in str(refused.value)
    assert f"hydra.run.dir={partial / '2'}" in str(refused.value)
    overlap = tmp_path / "overlap"
    shutil.copytree(sweeps[2] / "0", overlap / "0")
    shutil.copytree(sweeps[3] / "0", overlap / "1")
    shutil.copytree(sweeps[3] / "1", overlap / "2")
    shutil.copytree(sweeps[3] / "2", overlap / "3")
    with pytest.raises(ClonebenchError, match="overlapping shards|in both"):
        merge(overlap)


@pytest.mark.parametrize("launcher", ["submitit_local", "joblib"])
def test_a_real_multirun_with_hydra_launchers(tmp_path, dataset, launcher):
    with running_standin(max_lifetime=600) as server:
        command = [sys.executable, str(REPO / "run_vc.py"), "--config-name", "demo", "-m", f"hydra/launcher={launcher}",
                   f"paths.results_dir={tmp_path / 'results'}", f"dataset.manifest_filename={dataset / 'metadata.json'}",
                   f"dataset.root_path={dataset}", f"adversary.endpoint_url={server.url}/v1/tts", "+vc.generate_only=true",
                   "adversary.reference_check=false", "vc.shard.count=2", "vc.shard.index=range(0,2)"]
        if launcher == "joblib":
            command.append("hydra.launcher.n_jobs=2")
        result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                                env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    sweeps = list((tmp_path / "results" / "demo").glob("multirun-*"))
    assert len(sweeps) == 1
    merged = merge(sweeps[0])
    manifest = json.loads((merged / "run_manifest.json").read_text())
    assert manifest["status"] == "generated" and manifest["counts"] == {"generated": 8}


def test_one_shard_with_an_unhonoured_seed_makes_the_merged_run_unseeded(sweeps):
    """Each shard's gate probes its own server: the merged run claims an honoured seed only if every shard's did.
    (The sweep is edited in place and restored.)"""
    sweep = sweeps[2]
    verdicts = [json.loads((sweep / name / "run_manifest.json").read_text()).get("seed_honoured") for name in ("0", "1")]
    assert json.loads((merge(sweep) / "run_manifest.json").read_text())["seed_honoured"] == verdicts[0]
    shard = sweep / "1" / "run_manifest.json"
    original = shard.read_text()
    try:
        shard.write_text(json.dumps({**json.loads(original), "seed_honoured": False}))
        assert json.loads((merge(sweep) / "run_manifest.json").read_text())["seed_honoured"] is False
    finally:
        shard.write_text(original)
        merge(sweep)


def test_a_copied_sweep_merges_from_a_relative_path_and_an_unscored_shard_is_named(sweeps, tmp_path, monkeypatch):
    """The CSVs record paths relative to their run, so a copy of the sweep merges from the relative path Hydra prints;
    the merged CSV names the merged run's own WAVs; a shard without scores is named, with the command that scores it."""
    import csv

    sweep = tmp_path / "copied"
    shutil.copytree(sweeps[2], sweep, ignore=shutil.ignore_patterns("merged"))
    monkeypatch.chdir(tmp_path)
    merged = merge(Path("copied"))
    with open(merged / "generation_sample_metrics.csv", newline="") as handle:
        audio = [row["generated_audio"] for row in csv.DictReader(handle)]
    assert len(audio) == 8 and all(a.startswith("generated_audio/") and (merged / a).is_file() for a in audio)
    assert json.loads((merged / "scoring_manifest.json").read_text())["source_run"]["run_dir"] == "."
    (sweep / "1" / "generation_sample_metrics.csv").unlink()
    with pytest.raises(ClonebenchError, match=r"shard\(s\) 1 have no generation_sample_metrics.csv") as refused:
        merge(Path("copied"))
    assert f"+vc.evaluation.generated_audio_dir={sweep / '1' / 'generated_audio'}" in str(refused.value)
