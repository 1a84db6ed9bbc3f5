"""docs/runs.md's shard example, run exactly as printed in a scratch repository root (tests/docs_workspace.py): a
sweep of two shards of the demo, ``clonebench merge`` with the relative sweep path the page prints, and the status of
the merged run; and the everyday ``clonebench manifest`` of the libritts16 subset."""

from __future__ import annotations

import json

from tests.docs_workspace import Workspace

SWEEP = "python scripts/demo.py -m vc.shard.count=2"
MERGE = "clonebench merge results/demo/multirun-"
STATUS = "clonebench status results/demo/multirun-<stamp>-<id>/merged"
MANIFEST = "clonebench manifest reproduction/subsets/libritts16_v1/metadata.json"
README_COMMANDS = (SWEEP, MERGE, STATUS, MANIFEST)


def test_shards_merged_and_read_back_as_printed(tmp_path):
    space = Workspace(tmp_path / "repo")
    outputs = dict(zip(README_COMMANDS, space.run_printed(README_COMMANDS)))
    (sweep,) = (tmp_path / "repo" / "results" / "demo").glob("multirun-*")
    assert sorted(p.name for p in sweep.iterdir() if p.is_dir()) == ["0", "1", "merged"]
    manifest = json.loads((sweep / "merged" / "run_manifest.json").read_text())
    assert manifest["counts"] == {"generated": 8}
    assert f"merged into results/demo/{sweep.name}/merged" in outputs[MERGE]
    assert "coverage 8/8 generated" in outputs[STATUS]
    listed = json.loads(outputs[MANIFEST])
    assert len(listed["samples"]) == 16 and listed["audio_verified"] is False and listed["input_fingerprint"]
