"""Service provenance in the run manifest, and pairs from a Hugging Face dataset folder."""

from __future__ import annotations

import json

import pytest

from clonebench.core.records import RunStatus
from tests.conftest import generate_run, load_manifest


def test_service_trees_are_hashed_and_cached(tmp_path, dataset, standin):
    code = tmp_path / "fish-speech"
    (code / "tools").mkdir(parents=True)
    (code / "tools" / "api_server.py").write_text("print('server')\n")
    (code / "references").mkdir()
    (code / "references" / "x.wav").write_bytes(b"not source")
    ckpt = tmp_path / "s2-pro"
    ckpt.mkdir()
    (ckpt / "model.safetensors").write_bytes(b"\0" * 4096)
    (ckpt / "codec.pth").write_bytes(b"\1" * 1024)
    extra = [f"+adversary.service_code_path={code}", f"+adversary.service_checkpoint_path={ckpt}",
             f"+adversary.service_codec_checkpoint_path={ckpt / 'codec.pth'}", "adversary.max_samples=2"]
    status, run_dir = generate_run(tmp_path, dataset, standin.url, *extra)
    manifest = load_manifest(run_dir)
    provenance = manifest["generation_provenance"]
    assert status == RunStatus.GENERATED
    assert provenance["service_code"]["files"] == 1  # sources only: reference audio is not code
    assert provenance["service_checkpoint"]["files"] == 2
    assert provenance["service_codec_checkpoint"]["bytes"] == 1024
    assert manifest["generation_fingerprint_fields"]["service"]["service_checkpoint"] == \
        provenance["service_checkpoint"]["sha256"]
    assert (tmp_path / "results" / ".cache" / "file_sha256.sqlite").is_file()
    harness = manifest["provenance"]["harness"]
    assert len(harness["source_sha256"]) == 64 and "hydra-core" in manifest["provenance"]["packages"]
    (ckpt / "model.safetensors").write_bytes(b"\2" * 4096)
    status, again = generate_run(tmp_path, dataset, standin.url, *extra, run_dir=tmp_path / "results" / "again")
    assert load_manifest(again)["fingerprints"]["generation"] != manifest["fingerprints"]["generation"]


def test_missing_service_path_is_a_config_error(tmp_path, dataset, standin):
    from clonebench.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"adversary.service_code_path=.*does not exist"):
        generate_run(tmp_path, dataset, standin.url, f"+adversary.service_code_path={tmp_path / 'nope'}")


def test_hf_dataset_folder(tmp_path, dataset, standin):
    datasets = pytest.importorskip("datasets")
    pairs = json.loads((dataset / "metadata.json").read_text())["pairs"]
    rows = []
    for pair in pairs:
        row = dict(pair)
        row["prompt_audio"] = {"bytes": (dataset / pair["prompt_file_name"]).read_bytes(), "path": None}
        row["target_audio"] = {"bytes": (dataset / pair["target_file_name"]).read_bytes(), "path": None}
        rows.append(row)
    features = None
    table = datasets.Dataset.from_list(rows, features=features)
    table = table.cast_column("prompt_audio", datasets.Audio(decode=False))
    table = table.cast_column("target_audio", datasets.Audio(decode=False))
    table.save_to_disk(str(tmp_path / "hf"))
    from clonebench.runs.pipeline import run
    from tests.conftest import compose

    cfg = compose("ots_vc/clean/libritts/fish_audio_s2_ots", [
        f"paths.results_dir={tmp_path / 'results'}", f"dataset.hf_path={tmp_path / 'hf'}",
        f"adversary.endpoint_url={standin.url}/v1/tts", "+vc.generate_only=true", "adversary.max_samples=3"])
    status = run(cfg, tmp_path / "results" / "hf_run", "test").generation
    manifest = load_manifest(tmp_path / "results" / "hf_run")
    assert status == RunStatus.GENERATED and len(manifest["samples"]) == 3
    assert [s["prompt_sha256"] for s in manifest["samples"]] == [p["prompt_sha256"] for p in pairs[:3]]
