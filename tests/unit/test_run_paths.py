"""Paths a run records are relative to it (core/runpaths.py); a reader resolves them against the folder it was given,
old absolute paths by their tail inside it; the shards of a resume chain merge as one (runs/merge_shards.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clonebench.core.confine import OutsideRunError
from clonebench.core.errors import ClonebenchError
from clonebench.core.hashing import sha256_file
from clonebench.core.runpaths import RunFiles, generation_run, recorded, run_files
from clonebench.runs.merge_shards import NOT_RUN_DEFINING, check_configs, read_shards, resume_command, run_defining


def test_recorded_is_relative_inside_the_run_and_absolute_outside(tmp_path):
    run = tmp_path / "run"
    (run / "generated_audio" / "s").mkdir(parents=True)
    assert recorded(run, run / "generated_audio" / "s" / "a.wav") == "generated_audio/s/a.wav"
    assert recorded(run, run) == "."
    assert recorded(run, tmp_path / "data" / "p.wav") == str(tmp_path / "data" / "p.wav")
    assert recorded(run, None) is None
    link = tmp_path / "link"
    link.symlink_to(run)
    assert recorded(link, run / "generated_audio" / "s" / "a.wav") == "generated_audio/s/a.wav"


def test_old_absolute_paths_are_read_inside_the_given_folder_and_missing_files_are_named(tmp_path):
    copy = tmp_path / "copy"
    (copy / "generated_audio" / "s").mkdir(parents=True)
    (copy / "generated_audio" / "s" / "a.wav").write_bytes(b"x")
    original = tmp_path / "original"  # kept, with a file of the same name: the copy must not read it
    (original / "generated_audio" / "s").mkdir(parents=True)
    (original / "generated_audio" / "s" / "a.wav").write_bytes(b"changed")
    files = RunFiles(copy, [str(original)], "copy's CSV")
    assert files.locate(str(original / "generated_audio" / "s" / "a.wav")) == (copy / "generated_audio/s/a.wav").resolve()
    assert files.locate("generated_audio/s/a.wav") == (copy / "generated_audio/s/a.wav").resolve()
    assert files.locate(str(original / "generated_audio" / "s" / "gone.wav")).name == "gone.wav"
    assert files.locate("/data/elsewhere/p.wav") == Path("/data/elsewhere/p.wav")  # outside the run: as recorded
    assert files.rebased == 2
    # an older merge recorded its CSV paths relative to the directory it was run from
    assert files.locate("results/x/merged/generated_audio/s/a.wav") == (copy / "generated_audio/s/a.wav").resolve()
    assert files.rebased == 3
    note = files.missing_note(4)
    assert note.startswith("copy's CSV: 2 of 4 recorded file(s) missing") and "gone.wav" in note and "p.wav" in note
    with pytest.raises(OutsideRunError):
        files.locate("../original/generated_audio/s/a.wav")
    assert RunFiles(copy).missing_note() is None


def test_the_scored_run_of_a_moved_run_is_the_moved_folder(tmp_path):
    moved = tmp_path / "moved"
    moved.mkdir()
    (moved / "run_manifest.json").write_text(json.dumps({"run_dir": "/gone/run"}))
    assert generation_run(moved, {"run_dir": "."}) == moved.resolve()
    assert generation_run(moved, {"run_dir": "/gone/run"}) == moved  # an older run scored in its own folder
    assert generation_run(moved, {"run_dir": "/other/run"}) == Path("/other/run")  # evaluate-only of another run
    assert generation_run(moved, {"run_dir": "results/x/merged", "merged_from_shards": True}) == moved
    digest = sha256_file(moved / "run_manifest.json")  # made elsewhere, but the manifest it scored is this one
    assert generation_run(moved, {"run_dir": "/third/run", "run_manifest_sha256": digest}) == moved
    assert generation_run(moved, {"run_dir": "/third/run", "run_manifest_sha256": "0" * 64}) == Path("/third/run")
    files = run_files(moved, {"run_dir": "/gone/run"})
    assert files.locate("/gone/run/generated_audio/a.wav", check=False) == (moved / "generated_audio/a.wav").resolve()


def _write_shard(folder: Path, index: int, origin: Path | None, status: str = "generated", made_in: Path | None = None,
                 **config) -> None:
    folder.mkdir(parents=True)
    vc = {"shard": {"index": index, "count": 2}, "resume_from": str(origin) if origin else None}
    manifest = {"config": {"vc": vc, "paths": {"results_dir": str(folder.parent)}, **config},
                "fingerprints": {"generation": "g"}, "shard": {"index": index, "count": 2}, "errors": [],
                "status": status, "samples": [],
                "config_source": "configs/demo.yaml with overrides ['+vc.generate_only=true', 'vc.shard.count=2', "
                                 f"'vc.shard.index={index}', 'hydra.run.dir=x']"}
    if origin:
        manifest["resume_origin"] = str(origin)
    manifest["run_dir"] = str(made_in or folder)
    (folder / "run_manifest.json").write_text(json.dumps(manifest))


def test_a_resume_chain_in_the_sweep_merges_as_its_newest_run(tmp_path):
    sweep = tmp_path / "sweep"
    _write_shard(sweep / "0", 0, None)
    _write_shard(sweep / "1", 1, None, "interrupted")
    _write_shard(sweep / "1-resumed", 1, sweep / "1", "interrupted")
    _write_shard(sweep / "1-resumed-resumed", 1, sweep / "1-resumed")
    (sweep / ".merged.merging-abc").mkdir()  # a merge being written elsewhere: never a shard
    shards = read_shards(sweep)
    assert [s.name for s in shards] == ["0", "1-resumed-resumed"]
    assert [p.name for p in shards[1].superseded] == ["1-resumed", "1"]
    command = resume_command(sweep, shards[1])
    assert command.startswith("python run_vc.py --config-name demo +vc.generate_only=true vc.shard.count=2 ")
    assert f"vc.resume_from={sweep / '1-resumed-resumed'}" in command and "hydra.run.dir=x" not in command


def test_a_resume_chain_is_found_in_a_sweep_that_was_moved(tmp_path):
    cluster = Path("/cluster/results/multirun-1")  # where the sweep was made; the records name it
    sweep = tmp_path / "copied"
    _write_shard(sweep / "0", 0, None, made_in=cluster / "0")
    _write_shard(sweep / "1", 1, None, "interrupted", made_in=cluster / "1")
    _write_shard(sweep / "1-resumed", 1, cluster / "1", made_in=cluster / "1-resumed")
    assert [s.name for s in read_shards(sweep)] == ["0", "1-resumed"]


def test_only_the_keys_that_say_how_a_shard_ran_are_not_compared():
    config = {"vc": {"shard": {"index": 1}, "resume_from": "/a", "evaluation": {"generated_audio_dir": "/b"}},
              "paths": {"results_dir": "r"}, "seed": 1}
    assert run_defining(config) == {"vc": {"evaluation": {}}, "seed": 1}
    assert config["vc"]["resume_from"] == "/a"  # a copy
    assert "vc.resume_from" in NOT_RUN_DEFINING and "seed" not in NOT_RUN_DEFINING


def test_an_empty_or_missing_sweep_is_refused(tmp_path):
    with pytest.raises(ClonebenchError, match="no such sweep folder"):
        read_shards(tmp_path / "nope")
    with pytest.raises(ClonebenchError, match="no shard runs"):
        read_shards(tmp_path)


def test_shards_that_differ_beyond_how_they_ran_are_refused_naming_the_shard_and_the_key(tmp_path):
    sweep = tmp_path / "sweep"
    _write_shard(sweep / "0", 0, None, seed=1)
    _write_shard(sweep / "1", 1, sweep / "elsewhere", seed=1)  # resumed from a run elsewhere: same run
    assert check_configs(sweep, read_shards(sweep))["vc"] == {"resume_from": None}
    _write_shard(sweep / "2", 1, None, seed=2)
    with pytest.raises(ClonebenchError, match=r"shard\(s\) 2 ran with another config than shard 0 \(seed;"):
        check_configs(sweep, read_shards(sweep))


def test_status_says_whether_the_scored_run_is_still_there(tmp_path):
    from clonebench.evaluate.execution.progress import ScoringProgress
    from clonebench.runs.status import scoring_summary

    source = tmp_path / "generated"
    source.mkdir()
    (source / "run_manifest.json").write_text("{}")
    for scored_in, expected in ((source, "."), (tmp_path / "scored", str(source))):
        progress = ScoringProgress(scored_in, ["ecapa"], source)
        progress.finish("complete")
        progress.close()
        assert json.loads((scored_in / "scoring_progress.json").read_text())["source_run"] == expected
        assert scoring_summary(scored_in)["source_run_present"] is True
    source.rename(tmp_path / "moved-away")
    assert scoring_summary(tmp_path / "scored")["source_run_present"] is False
