"""``clonebench prompts`` writes what rvcbench 2.2.1's ``rvcbench prompts`` writes.

1. Byte for byte against the peer's own exporter (``rvcbench.benchmark.submission.export_prompts``), run offline
   on a suite built here over the eSpeak NG demo dataset (its selection file computed with rvcbench's own
   ``input_records`` / ``input_fingerprint``), including a transcript with a line break: prompts.jsonl equal,
   prompts.tsv / prompts.lst equal once each side's own absolute output folder is replaced, the references equal.
2. Field by field against onboarding-v1's libritts task for the libritts16 manifest (its audio is not here):
   the same ids, order, texts, languages, speakers, reference names and reference hashes.
"""

from __future__ import annotations

import json
import logging
import shutil

import pytest

from clonebench.cli.main import main as cli
from clonebench.core.errors import ClonebenchError
from clonebench.external.pair_sets import from_manifest
from clonebench.external.prompts import batch_list, prompt_entries
from tests.conftest import LIBRITTS16


def _rvcbench_suite(data, suite_dir, rows):
    from omegaconf import OmegaConf
    from rvcbench.benchmark import submission as upstream
    from rvcbench.benchmark.artifacts import input_fingerprint, input_records
    from rvcbench.datasets.zero_shot import ZeroShotDataset

    suite_dir.mkdir()
    (suite_dir / "demo.metadata.json").write_text(json.dumps(rows))
    config = OmegaConf.load(upstream.CONFIGS_DIR / "dataset" / "libritts.yaml")
    config.update(root_path=str(data), use_hf_dataset=False, manifest_filename=str(suite_dir / "demo.metadata.json"),
                  speaker_id=None)
    records = input_records(ZeroShotDataset(OmegaConf.create({}), config, logging.getLogger()).get_zero_shot_samples())
    (suite_dir / "demo.selection.json").write_text(json.dumps({
        "input_fingerprint": input_fingerprint(records),
        "samples": [{k: r[k] for k in ("sample_id", "prompt_sha256", "target_sha256")} for r in records]}))
    (suite_dir / "suite.json").write_text(json.dumps({
        "suite": "demo-v1", "version": 1, "leaderboard": False, "label": "test suite", "evaluation": {
            "required_metrics": ["sim"]},
        "tasks": [{"task": "espeak_demo", "dataset_config": "libritts", "hf_config_name": data.name,
                   "manifest": "demo.metadata.json", "selection": "demo.selection.json"}]}))
    return suite_dir / "suite.json"


def test_prompt_files_equal_the_peer_exporter_byte_for_byte(dataset, tmp_path):
    from rvcbench.benchmark.submission import export_prompts

    rows = json.loads((dataset / "metadata.json").read_text())["pairs"]
    rows[2]["target_text"] = "Rice is often served\n   in round bowls.\r\nTwice."  # becomes one line in the lists
    manifest = dataset / "list.json"
    manifest.write_text(json.dumps(rows))
    suite = _rvcbench_suite(dataset, tmp_path / "suite", rows)
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    export_prompts(suite, theirs, data_root=dataset.parent)
    assert cli(["prompts", "--manifest", str(manifest), "--root", str(dataset), "--output", str(ours)]) == 0
    assert (ours / "prompts.jsonl").read_bytes() == (theirs / "prompts.jsonl").read_bytes()
    for name in ("prompts.tsv", "prompts.lst"):
        mine = (ours / name).read_text().replace(str(ours.resolve()), "OUT")
        assert mine == (theirs / name).read_text().replace(str(theirs.resolve()), "OUT")
        assert "served in round bowls. Twice." in mine
    references = sorted(p.relative_to(theirs) for p in (theirs / "references").rglob("*") if p.is_file())
    assert references == sorted(p.relative_to(ours) for p in (ours / "references").rglob("*") if p.is_file())
    assert all((ours / r).read_bytes() == (theirs / r).read_bytes() for r in references)
    targets = {r["target_sha256"] for r in rows}
    from clonebench.core.hashing import sha256_file

    assert not any(sha256_file(p) in targets for p in ours.rglob("*") if p.is_file())  # no answer is exported


def test_a_separator_inside_a_text_is_refused_like_the_peer(dataset, tmp_path):
    from rvcbench.benchmark.submission import write_batch_lists

    entries = prompt_entries(from_manifest(dataset / "metadata.json", dataset))
    entries[1]["text"] = "a | b"
    (tmp_path / "theirs").mkdir()
    with pytest.raises(ValueError, match="prompts.lst"):
        write_batch_lists(entries, tmp_path / "theirs")
    with pytest.raises(ClonebenchError, match="prompts.lst"):
        batch_list(entries, tmp_path / "ours", "|", "prompts.lst")
    assert batch_list(entries, tmp_path / "ours", "\t", "prompts.tsv")  # fine for the TSV


def test_libritts16_gives_onboarding_v1_libritts_entries_field_by_field():
    from rvcbench.benchmark.submission import load_suite, output_id, read_json

    spec = load_suite("onboarding-v1")
    task = next(t for t in spec["tasks"] if t["task"] == "libritts")
    rows = read_json(spec["_directory"] / task["manifest"])
    frozen = {s["pair_id"]: s for s in read_json(spec["_directory"] / task["selection"])["samples"]}
    pair_set = from_manifest(LIBRITTS16, None, verify_audio=False)  # audio hashes as declared
    assert pair_set.task == "libritts"
    entries = prompt_entries(pair_set)
    assert [e["pair_id"] for e in entries] == [r["pair_id"] for r in rows]
    for entry, row, sample in zip(entries, rows, pair_set.samples):
        expected = frozen[row["pair_id"]]
        assert entry == {"id": output_id("libritts", row["pair_id"]), "task": "libritts", "pair_id": row["pair_id"],
                         "speaker_id": str(row["speaker_id"]),
                         "reference_audio": f"references/libritts/{row['pair_id']}.wav",
                         "reference_sha256": expected["prompt_sha256"], "reference_text": row["prompt_text"],
                         "text": row["target_text"], "language": row["target_language"],
                         "output_file": f"libritts/{row['pair_id']}.wav"}
        assert sample.sample_id == expected["sample_id"]


def _same_prompt_folders(ours, theirs):
    for name in ("prompts.jsonl", "suite.json"):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name
    for name in ("prompts.tsv", "prompts.lst"):
        mine = (ours / name).read_text().replace(str(ours.resolve()), "OUT")
        assert mine == (theirs / name).read_text().replace(str(theirs.resolve()), "OUT"), name
    references = sorted(p.relative_to(theirs) for p in (theirs / "references").rglob("*") if p.is_file())
    assert references == sorted(p.relative_to(ours) for p in (ours / "references").rglob("*") if p.is_file())
    assert all((ours / r).read_bytes() == (theirs / r).read_bytes() for r in references)


@pytest.mark.parametrize("tasks", [None, ["vctk", "robotcall"]], ids=["all", "selected"])
def test_suite_prompts_equal_the_peer_exporter_on_onboarding_v1(onboarding_standin, tmp_path, tasks):
    """``clonebench prompts --suite`` against rvcbench's own ``export_prompts`` run offline on the stand-in data
    (the suite folder whose selections carry the synthetic files' hashes): every file byte for byte, suite.json
    included (a task selection changes its sha256 and label as rvcbench's does); no target is exported."""
    from rvcbench.benchmark.submission import export_prompts

    from clonebench.core.hashing import sha256_file
    from clonebench.suite.definition import load_suite
    from clonebench.suite.rows import task_rows

    folder, data = onboarding_standin / "suite" / "onboarding_v1", onboarding_standin / "dataset"
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    export_prompts(str(folder / "suite.json"), theirs, data_root=data, tasks=tasks)
    selection = ["--tasks", *tasks] if tasks else []
    assert cli(["prompts", "--suite", str(folder), *selection, "--data-root", str(data), "--output", str(ours)]) == 0
    _same_prompt_folders(ours, theirs)
    lines = (ours / "prompts.jsonl").read_text().splitlines()
    assert len(lines) == (52 if tasks is None else 36)
    suite = load_suite(str(folder), tasks)
    targets = {r["target_sha256"] for t in suite.tasks for r in task_rows(suite, t).rows} - {
        r["prompt_sha256"] for t in suite.tasks for r in task_rows(suite, t).rows}
    assert targets and not any(sha256_file(p) in targets for p in ours.rglob("*") if p.is_file())
    assert f"clonebench score --suite {folder}" in (ours / "README.md").read_text()


def test_suite_options_are_checked_before_anything_is_read(onboarding_standin, tmp_path, capsys):
    folder = str(onboarding_standin / "suite" / "onboarding_v1")
    out = str(tmp_path / "out")
    assert cli(["prompts", "--suite", folder, "--output", out]) == 2
    captured = capsys.readouterr()
    assert "needs --data-root DIR" in captured.out + captured.err
    with pytest.raises(ClonebenchError, match="needs --data-root DIR"):
        _pair_sets(["--suite", folder])
    with pytest.raises(ClonebenchError, match="drop --manifest, --root"):
        _pair_sets(["--suite", folder, "--data-root", str(tmp_path), "--manifest", "m.json", "--root", "r"])
    with pytest.raises(ClonebenchError, match="add --suite NAME"):
        _pair_sets(["--manifest", "m.json", "--tasks", "libritts"])
    with pytest.raises(ClonebenchError, match=r"unknown or empty task selection \['nope'\]"):
        _pair_sets(["--suite", folder, "--data-root", str(tmp_path), "--tasks", "nope"])
    with pytest.raises(ClonebenchError, match=r"(?s)under --data-root .*task libritts: 32 problem\(s\).*not found.*"
                                              r"\(check --data-root\)"):
        _pair_sets(["--suite", folder, "--data-root", str(tmp_path), "--tasks", "libritts"])
    data = tmp_path / "data"
    shutil.copytree(onboarding_standin / "dataset", data)
    shutil.rmtree(data / "VCTK")
    with pytest.raises(ClonebenchError, match=r"(?s)task vctk: 32 problem.*Fix: run the tasks whose inputs are "
                                              r"complete with --tasks libritts robotcall;"):
        _pair_sets(["--suite", folder, "--data-root", str(data)])
    assert not (tmp_path / "out").exists()


def _pair_sets(argv):
    import argparse

    from clonebench.cli import pair_source

    parser = argparse.ArgumentParser()
    pair_source.add_arguments(parser)
    return pair_source.pair_sets(parser.parse_args(argv))
