"""Paths read from a journal, manifest or shard stay inside their run directory (absolute, ``../``, symlinks).

A crafted journal that points at a file outside the run, with a matching sha256, must not be reused by a
resume, scored by an evaluate_only run, or used by ``clonebench merge`` to write outside its output.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from clonebench.core.errors import ClonebenchError
from clonebench.core.hashing import sha256_file
from clonebench.core.records import RunStatus
from tests.conftest import compose, generate_run, journal, load_manifest

NO_GATE = "adversary.reference_check=false"


def _rewrite_sample_event(run_dir: Path, sample_id: str, **changes) -> None:
    path = run_dir / "sample_events.jsonl"
    lines = []
    for line in path.read_text().splitlines():
        event = json.loads(line)
        if event["event"] == "sample" and event["sample_id"] == sample_id and event["status"] == "generated":
            event.update(changes)
        lines.append(json.dumps(event))
    path.write_text("".join(x + "\n" for x in lines))


def _escape(run_dir: Path, outside: Path, how: str) -> tuple[str, Path]:
    """Move the first generated WAV of ``run_dir`` out to ``outside`` and point the journal at it ``how``."""
    row = load_manifest(run_dir)["samples"][0]
    inside = run_dir / row["audio_path"]
    outside.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(inside, outside)
    if how == "absolute":
        _rewrite_sample_event(run_dir, row["sample_id"], audio_path=str(outside))
    elif how == "dotdot":
        _rewrite_sample_event(run_dir, row["sample_id"], audio_path=os.path.relpath(outside, run_dir))
    elif how == "symlink":
        os.symlink(outside, inside)  # the journaled path is unchanged; the file is a link out of the run
    else:
        raise AssertionError(how)
    assert sha256_file(outside) == row["audio_sha256"]
    return row["sample_id"], outside


@pytest.mark.parametrize("how", ["absolute", "dotdot", "symlink"])
def test_resume_never_reuses_audio_outside_the_source_run(tmp_path, dataset, standin, how):
    status, first = generate_run(tmp_path, dataset, standin.url, NO_GATE, run_dir=tmp_path / "results" / "first")
    assert status == RunStatus.GENERATED
    sample_id, outside = _escape(first, tmp_path / "elsewhere" / "planted.wav", how)
    standin.received.clear()
    status, second = generate_run(tmp_path, dataset, standin.url, NO_GATE, f"vc.resume_from={first}",
                                  run_dir=tmp_path / "results" / "second")
    assert status == RunStatus.GENERATED
    regenerated = {e["sample_id"] for e in journal(second) if e["event"] == "attempt_start"}
    assert regenerated == {sample_id}  # refused as a source, generated again
    row = next(r for r in load_manifest(second)["samples"] if r["sample_id"] == sample_id)
    assert "reused_from" not in row
    new = second / row["audio_path"]
    assert not new.is_symlink() and os.stat(new).st_ino != os.stat(outside).st_ino  # not linked to the outside file


def test_resume_revalidates_reused_audio_as_wav(tmp_path, dataset, standin):
    status, first = generate_run(tmp_path, dataset, standin.url, NO_GATE, run_dir=tmp_path / "results" / "first")
    row = load_manifest(first)["samples"][1]
    junk = b"RIFF" + os.urandom(4000)  # not a WAV, but journaled with its own sha256 (a consistent forgery)
    (first / row["audio_path"]).write_bytes(junk)
    from clonebench.core.hashing import sha256_bytes
    _rewrite_sample_event(first, row["sample_id"], audio_sha256=sha256_bytes(junk))
    standin.received.clear()
    status, second = generate_run(tmp_path, dataset, standin.url, NO_GATE, f"vc.resume_from={first}",
                                  run_dir=tmp_path / "results" / "second")
    assert status == RunStatus.GENERATED
    assert {e["sample_id"] for e in journal(second) if e["event"] == "attempt_start"} == {row["sample_id"]}
    assert (second / row["audio_path"]).read_bytes() != junk


@pytest.mark.parametrize("how", ["absolute", "dotdot", "symlink"])
def test_evaluate_inputs_refuse_audio_outside_the_source_run(tmp_path, dataset, standin, how):
    from clonebench.config.settings import read_settings
    from clonebench.data.selection import load_samples
    from clonebench.evaluate.inputs import load_requested

    status, first = generate_run(tmp_path, dataset, standin.url, NO_GATE, run_dir=tmp_path / "results" / "first")
    sample_id, outside = _escape(first, tmp_path / "elsewhere" / "planted.wav", how)
    cfg = compose("demo", [f"paths.results_dir={tmp_path / 'results'}", f"dataset.manifest_filename={dataset / 'metadata.json'}",
                           f"dataset.root_path={dataset}", f"adversary.endpoint_url={standin.url}/v1/tts"])
    requested, _ = load_requested(first, load_samples(read_settings(cfg, "test")))
    by_id = {r.sample.sample_id: r for r in requested}
    assert by_id[sample_id].item is None and "outside" in by_id[sample_id].problem
    assert sum(r.item is not None for r in requested) == 7  # the others are scored as usual


@pytest.mark.parametrize("how", ["dotdot", "absolute"])
def test_merge_writes_only_inside_its_output(tmp_path, dataset, standin, how):
    from clonebench.runs.merge import merge
    from clonebench.runs.pipeline import run

    sweep = tmp_path / "sweep"
    cfg = compose("demo", [f"paths.results_dir={tmp_path / 'results'}", f"dataset.manifest_filename={dataset / 'metadata.json'}",
                           f"dataset.root_path={dataset}", f"adversary.endpoint_url={standin.url}/v1/tts",
                           "+vc.generate_only=true", NO_GATE])
    run(cfg, sweep / "0", "test")
    shard = sweep / "0"
    manifest = load_manifest(shard)
    row = manifest["samples"][0]
    output = tmp_path / "out" / "merged"
    victim = tmp_path / "out" / "victim.wav"  # a file of the user's, next to the output folder
    victim.parent.mkdir(parents=True)
    victim.write_bytes(b"precious")
    planted = sweep / "victim.wav"  # what the shard's crafted path reads, with the journaled sha256
    shutil.copyfile(shard / row["audio_path"], planted)
    row["audio_path"] = "../victim.wav" if how == "dotdot" else str(victim)
    (shard / "run_manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ClonebenchError, match="outside"):
        merge(sweep, output)
    assert victim.read_bytes() == b"precious"
    assert {p.name for p in (tmp_path / "out").iterdir()} <= {"victim.wav", "merged"}


def test_merge_refuses_to_replace_a_folder_that_is_not_a_merge(tmp_path, dataset, standin):
    from clonebench.runs.merge import merge
    from clonebench.runs.pipeline import run

    sweep = tmp_path / "sweep"
    cfg = compose("demo", [f"paths.results_dir={tmp_path / 'results'}", f"dataset.manifest_filename={dataset / 'metadata.json'}",
                           f"dataset.root_path={dataset}", f"adversary.endpoint_url={standin.url}/v1/tts",
                           "+vc.generate_only=true", NO_GATE])
    run(cfg, sweep / "0", "test")
    mine = tmp_path / "my_notes"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(ClonebenchError, match="not a merge output"):
        merge(sweep, mine)
    assert (mine / "notes.txt").read_text() == "keep"
    out = merge(sweep, tmp_path / "merged")
    assert merge(sweep, out) == out  # an earlier merge output is replaced
