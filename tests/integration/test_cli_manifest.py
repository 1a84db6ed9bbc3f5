"""`clonebench manifest` on the libritts16 subset and on a dataset whose audio is present."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import LIBRITTS16, REPO
from tests.unit.test_identity import EXPECTED_SEEDS


def clonebench(*args):
    return subprocess.run([sys.executable, "-m", "clonebench.cli.main", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")}, timeout=120)


def test_libritts16_ids_seeds_and_fingerprint():
    result = clonebench("manifest", str(LIBRITTS16))
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert len(out["samples"]) == 16 and len({s["sample_id"] for s in out["samples"]}) == 16
    assert [s["seed"] for s in out["samples"]] == EXPECTED_SEEDS
    assert len(out["input_fingerprint"]) == 64 and out["audio_verified"] is False
    reference = json.loads(LIBRITTS16.read_text())["pairs"]
    assert [s["sample_id"] for s in out["samples"]] == [p["sample_id"] for p in reference]
    assert [s["seed"] for s in json.loads(clonebench("manifest", str(LIBRITTS16), "--seed", "0").stdout)["samples"]] \
        == [p["source_index"] for p in reference]


def test_root_verifies_audio(dataset):
    ok = clonebench("manifest", str(dataset / "metadata.json"), "--root", str(dataset))
    assert ok.returncode == 0 and json.loads(ok.stdout)["audio_verified"] is True
    declared = json.loads(clonebench("manifest", str(dataset / "metadata.json")).stdout)
    assert declared["input_fingerprint"] == json.loads(ok.stdout)["input_fingerprint"]
    first = json.loads((dataset / "metadata.json").read_text())["pairs"][0]
    (dataset / first["prompt_file_name"]).write_bytes((dataset / first["target_file_name"]).read_bytes())
    bad = clonebench("manifest", str(dataset / "metadata.json"), "--root", str(dataset))
    assert bad.returncode == 2 and "row 0" in bad.stderr and "the manifest says" in bad.stderr


def test_missing_root_audio_on_libritts16_names_the_file(tmp_path):
    result = clonebench("manifest", str(LIBRITTS16), "--root", str(tmp_path))
    assert result.returncode == 2
    assert "16 problem(s)" not in result.stderr and "32 problem(s)" in result.stderr
    assert "audios/121/121_127105_000043_000007.wav' not found" in result.stderr
