"""The RVCBench 2.2.1 suites as clonebench reads them: for every task of onboarding-v1, core-v1 and full-v1, the
sample ids, seeds (run seed + source_index) and input fingerprint equal the task's ``*.selection.json``; the suite
sha256 and task selection equal rvcbench's own ``load_suite``; a changed package file is refused."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil

import pytest

from clonebench.data.identity import input_fingerprint
from clonebench.data.manifest import Selection, build_samples, declared_audio_source, samples_from_rows
from clonebench.suite.definition import load_suite
from clonebench.suite.package import SuiteFileError, installed_package, read_bytes
from clonebench.suite.rows import normalise, task_rows
from tests.conftest import LIBRITTS16

SUITES = ("onboarding-v1", "core-v1", "full-v1")
PAIRS = {"onboarding-v1": 52, "core-v1": 480, "full-v1": 12_724}


def _declared(suite, task, seed=42):
    rows = task_rows(suite, task)
    return rows, samples_from_rows(task.name, rows.rows, rows.variant, seed, declared_audio_source)


@pytest.mark.parametrize("name", SUITES)
def test_every_task_has_the_selection_files_ids_seeds_and_fingerprint(name):
    suite = load_suite(name)
    total = 0
    for task in suite.tasks:
        if task.derived:
            assert task.derived_from in suite.all_tasks and task.transform is not None
            continue
        rows, samples = _declared(suite, task, seed=7)
        frozen = rows.selection
        assert [s.sample_id for s in samples] == list(frozen.samples), task.name
        assert [s.seed for s in samples] == [7 + frozen.samples[s.sample_id].source_index for s in samples], task.name
        assert [s.row.source_index for s in samples] == [f.source_index for f in frozen.samples.values()], task.name
        assert [(s.prompt.sha256, s.target.sha256) for s in samples] == \
            [(f.prompt_sha256, f.target_sha256) for f in frozen.samples.values()], task.name
        assert input_fingerprint(samples) == frozen.input_fingerprint, task.name
        total += len(samples)
    assert total == PAIRS[name]


def test_libritts16_is_the_reproduction_subset():
    suite = load_suite("onboarding-v1")
    _, samples = _declared(suite, suite.task("libritts"))
    ours = build_samples(LIBRITTS16, None, Selection(), 42, verify_audio_files=False)
    assert [s.sample_id for s in samples] == [s.sample_id for s in ours]
    assert [s.seed for s in samples] == [s.seed for s in ours]
    assert input_fingerprint(samples) == input_fingerprint(ours)
    assert input_fingerprint(samples).startswith("edf4e442")


def test_suite_records_its_hf_revision_and_package():
    suite = load_suite("onboarding-v1")
    record = suite.record()
    assert record["hf_dataset_id"] == "Nanboy/RVCBench"
    assert record["hf_revision"] == "be01b27c45d921f121a0edf86da0fd96b069b169"
    assert record["files"]["distribution"] == "rvcbench" and record["files"]["version"] == "2.2.1"
    assert record["files"]["record_verified"] is True
    assert load_suite("core-v1").hf_revision == "a932bd08d6858f14bdda52356dde5a7b771f0245"


@pytest.mark.parametrize("name, tasks", [
    ("core-v1", None), ("core-v1", ["chinese", "french"]), ("core-v1", ["background"]),
    ("core-v1", ["compression-mp3-64k"]), ("core-v1", ["adv-spec", "textshift-hallucination"]),
    ("full-v1", None), ("full-v1", ["multispeaker"]), ("onboarding-v1", ["vctk"]), ("onboarding-v1", None)])
def test_selection_and_suite_sha256_equal_rvcbench(name, tasks):
    from rvcbench.benchmark.submission import load_suite as upstream_load
    from rvcbench.benchmark.submission import suite_record

    ours, theirs = load_suite(name, tasks), upstream_load(name, tasks=tasks)
    assert [t.name for t in ours.tasks] == [t["task"] for t in theirs["tasks"]]
    upstream = suite_record(theirs)
    mine = ours.record()
    for key in upstream:
        assert mine[key] == (list(upstream[key]) if key == "selected_tasks" else upstream[key]), key
    for task, raw in zip(ours.tasks, theirs["tasks"]):
        assert ours.metrics(task) == tuple(raw.get("required_metrics") or theirs["evaluation"]["required_metrics"])
        assert task.anchor == raw.get("anchor") and task.derived_from == raw.get("derived_from")
        assert list(task.group_by) == list(raw.get("group_by") or [])


def test_task_selection_adds_anchors_and_sources_and_refuses_unknown_tasks():
    suite = load_suite("core-v1", ["background", "compression-opus-16k"])
    assert [t.name for t in suite.tasks] == ["audioshift", "background-clean", "background", "compression-opus-16k"]
    assert suite.leaderboard is False and "Selected tasks only" in suite.label
    with pytest.raises(SuiteFileError, match=r"unknown or empty task selection \['nope'\].*chinese"):
        load_suite("core-v1", ["chinese", "nope"])
    with pytest.raises(SuiteFileError, match="unknown suite 'core-v9'.*core-v1"):
        load_suite("core-v9")


def test_a_changed_package_file_is_refused(tmp_path):
    package = installed_package()
    name = "rvcbench/suites/onboarding_v1/vctk16_v1.selection.json"
    copy = tmp_path / name
    copy.parent.mkdir(parents=True)
    shutil.copyfile(package.root / name, copy)
    fake = dataclasses.replace(package, root=tmp_path)
    assert read_bytes(fake, name) == copy.read_bytes()
    copy.write_bytes(copy.read_bytes().replace(b'"requested": 16', b'"requested": 15'))
    with pytest.raises(SuiteFileError, match=r"vctk16_v1.selection.json has sha256 .* RECORD .* says"):
        read_bytes(fake, name)
    (copy.parent / "extra.json").write_text("{}")
    with pytest.raises(SuiteFileError, match="not listed in the RECORD"):
        read_bytes(fake, "rvcbench/suites/onboarding_v1/extra.json")


def test_missing_fields_are_filled_as_rvcbench_fills_them(tmp_path):
    """Rows without dataset_name, split, pair_id, target file or language: ids and fingerprint as rvcbench's loader
    (ZeroShotDataset + input_records, run here on the same files) computes them."""
    import numpy as np
    import soundfile as sf
    from omegaconf import OmegaConf
    from rvcbench.benchmark.artifacts import input_fingerprint as upstream_fingerprint
    from rvcbench.benchmark.artifacts import input_records
    from rvcbench.datasets.zero_shot import ZeroShotDataset

    root = tmp_path / "VCTK"
    (root / "audios").mkdir(parents=True)
    for number, name in enumerate(("a.wav", "b.wav", "c.wav")):
        sf.write(str(root / "audios" / name), np.full(160 * (number + 1), 0.1, dtype="float32"), 16000)
    raw = [{"speaker_id": "p1", "prompt_file_name": "audios/a.wav", "target_file_name": "audios/b.wav",
            "prompt_text": "one", "target_text": "two", "prompt_language": "EN", "source_manifest": "p1.json",
            "source_index": 4},
           {"prompt_speaker_id": "p2", "prompt_file_name": "audios/c.wav", "prompt_text": "three",
            "target_text": "four", "prompt_language": "EN", "source_manifest": "p2_text.json", "source_index": 9,
            "split": "dev", "dataset_name": "Other"}]
    manifest = root / "m.json"
    manifest.write_text(json.dumps(raw))
    config = OmegaConf.create({"root_path": str(root), "use_hf_dataset": False, "manifest_filename": str(manifest),
                               "speaker_id": None, "name": "VCTK"})
    upstream = input_records(ZeroShotDataset(OmegaConf.create({}), config, None).get_zero_shot_samples())

    from clonebench.data.manifest import file_audio_source
    from clonebench.suite.rows import infer_variants

    rows = [normalise(r, "VCTK", "m.json", i) for i, r in enumerate(raw)]
    infer_variants(rows)
    samples = samples_from_rows("m", rows, Selection(None), 42, file_audio_source(root))
    assert [s.sample_id for s in samples] == [r["sample_id"] for r in upstream]
    assert [s.row.pair_id for s in samples] == ["VCTK-p1-000000", "VCTK-p2-000001"]
    assert [s.row.manifest_variant for s in samples] == ["speaker", "speaker_text"]
    assert input_fingerprint(samples) == upstream_fingerprint(upstream)


def test_a_hostile_suite_folder_is_refused(tmp_path):
    """A suite given by path: task files must be plain names in its folder, and the pairs must match the selection."""
    package = installed_package()
    source = package.root / "rvcbench/suites/onboarding_v1"
    folder = tmp_path / "onboarding_v1"
    shutil.copytree(source, folder)
    spec = json.loads((folder / "suite.json").read_text())
    spec["tasks"][1]["manifest"] = "../../etc/passwd"
    (folder / "suite.json").write_text(json.dumps(spec))
    with pytest.raises(SuiteFileError, match=r"task vctk: manifest '../../etc/passwd' must be a plain file"):
        load_suite(str(folder))
    spec["tasks"][1]["manifest"] = "vctk16_v1.metadata.json"
    spec["tasks"][1]["hf_config_name"] = "../VCTK"
    (folder / "suite.json").write_text(json.dumps(spec))
    with pytest.raises(SuiteFileError, match="hf_config_name '../VCTK' must be a plain"):
        load_suite(str(folder))
    spec["tasks"][1]["hf_config_name"] = "VCTK"
    (folder / "suite.json").write_text(json.dumps(spec))
    rows = json.loads((folder / "vctk16_v1.metadata.json").read_text())
    (folder / "vctk16_v1.metadata.json").write_text(json.dumps(rows[:-1]))
    suite = load_suite(str(folder))
    assert suite.package.describe()["record_verified"] is False
    with pytest.raises(SuiteFileError, match="its selection file says"):  # metadata_sha256 no longer matches
        task_rows(suite, suite.task("vctk"))
    selection = json.loads((folder / "vctk16_v1.selection.json").read_text())
    selection["metadata_sha256"] = hashlib.sha256((folder / "vctk16_v1.metadata.json").read_bytes()).hexdigest()
    (folder / "vctk16_v1.selection.json").write_text(json.dumps(selection))
    with pytest.raises(SuiteFileError, match="selects 15 distinct pairs, vctk16_v1.selection.json lists 16"):
        task_rows(load_suite(str(folder)), suite.task("vctk"))
