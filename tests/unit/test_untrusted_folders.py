"""A scored folder is confined to itself and bounded (issue #28): links leaving it, FIFOs and directories named
``<id>.wav``, and clips whose header declares hours, are per-id problems that never echo a byte of any file."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from hypothesis import given
from hypothesis import strategies as st

from clonebench.cli.main import main as cli
from clonebench.data.audio import wav_header_duration
from clonebench.data.manifest import Selection
from clonebench.demo.dataset import scale_manifest
from clonebench.external.pair_sets import from_manifest
from clonebench.external.submitted import DEFAULT_MAX_CLIP_SECONDS, check_folder

MARKER = "QX7-zebra-confidential-81c4"  # the secret's content: must never appear in any output


def _wav(path: Path, seconds=0.4, freq=330.0, rate=16000):
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(seconds * rate)) / rate
    sf.write(str(path), 0.2 * np.sin(2 * np.pi * freq * t), rate, subtype="PCM_16")


def _long_header(seconds: float, rate=8000, real_frames=64) -> bytes:
    """An 8-bit mono WAV whose header declares ``seconds`` of audio, followed by only ``real_frames`` bytes."""
    size = int(seconds * rate)
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate, 1, 8)
    return (b"RIFF" + struct.pack("<I", 4 + 8 + len(fmt) + 8 + size) + b"WAVE" + b"fmt " + struct.pack("<I", len(fmt))
            + fmt + b"data" + struct.pack("<I", size) + bytes([128]) * real_frames)


@pytest.fixture(scope="module")
def pairs(tmp_path_factory, demo_dataset):
    import shutil

    root = tmp_path_factory.mktemp("ds")
    dataset = root / "dataset"
    shutil.copytree(demo_dataset, dataset)
    manifest = scale_manifest(dataset / "metadata.json", 12)
    return manifest, dataset, from_manifest(manifest, dataset, selection=Selection(None))


@pytest.fixture
def secret(tmp_path) -> Path:
    sibling = tmp_path / "sibling"
    sibling.mkdir()
    path = sibling / "other_model_output.wav"
    path.write_bytes(f"RIFF{MARKER} not a wav {MARKER}\n".encode())
    return path


@pytest.fixture
def hostile(pairs, tmp_path, secret):
    _, _, pair_set = pairs
    folder = tmp_path / "submitted"
    folder.mkdir()
    ids = pair_set.ids()
    _wav(folder / f"{ids[0]}.wav")                                                   # good
    os.symlink(secret, folder / f"{ids[1]}.wav")                                     # link to a sibling dir
    (folder / "hop").mkdir()
    os.symlink(secret, folder / "hop" / "next.wav")                                  # a chain leaving the folder
    os.symlink(folder / "hop" / "next.wav", folder / f"{ids[2]}.wav")
    os.symlink(os.path.join("..", "sibling", secret.name), folder / f"{ids[3]}.wav")  # relative ../ link
    _wav(folder / "takes" / "take7.wav", freq=410.0)
    os.symlink(os.path.join("takes", "take7.wav"), folder / f"{ids[4]}.wav")         # stays inside: allowed
    os.mkfifo(folder / f"{ids[5]}.wav")                                              # FIFO: never waited on
    (folder / f"{ids[6]}.wav").mkdir()                                               # a directory named <id>.wav
    (folder / f"{ids[7]}.wav").write_bytes(_long_header(3 * 3600))                   # 3 hours declared
    (folder / f"{ids[8]}.wav").write_bytes(f"plain text {MARKER}".encode())          # not a WAV, with the secret
    os.symlink(secret.parent, folder / pair_set.task)                                # nested layout dir outside
    return pair_set, folder, ids


def test_each_hostile_entry_is_a_classified_problem(hostile, secret):
    pair_set, folder, ids = hostile
    check = check_folder(folder, pair_set)
    by_id = {f.output_id: f for f in check.files}
    assert by_id[ids[0]].ok and by_id[ids[4]].ok
    for k in (1, 2, 3):
        assert by_id[ids[k]].kind == "unreadable" and "outside the folder" in by_id[ids[k]].problem
    assert by_id[ids[5]].kind == "unreadable" and "not a regular file (a FIFO" in by_id[ids[5]].problem
    assert by_id[ids[6]].kind == "unreadable" and "not a regular file (a directory)" in by_id[ids[6]].problem
    assert by_id[ids[7]].kind == "too_long" and "10800.0 s" in by_id[ids[7]].problem
    assert "evaluation.max_clip_seconds" in by_id[ids[7]].problem
    assert by_id[ids[8]].kind == "unreadable" and "text, not audio" in by_id[ids[8]].problem
    text = json.dumps(check.as_dict()) + "\n".join(check.lines())
    assert MARKER not in text and "RIFF" + MARKER[:4] not in text


def test_check_only_echoes_no_byte_of_the_secret(hostile, pairs, tmp_path, capsys, caplog):
    manifest, root, _ = pairs
    _, folder, ids = hostile
    output = tmp_path / "scores"
    code = cli(["score", "--manifest", str(manifest), "--root", str(root), "--variant", "all", "--generated",
                str(folder), "--output", str(output), "--check-only"])
    captured = capsys.readouterr()
    assert code == 1 and not output.exists()
    assert f"{ids[1]}: unreadable: " in captured.out and f"{ids[6]}: unreadable: " in captured.out
    assert f"{ids[7]}: too_long: " in captured.out
    for text in (captured.out, captured.err, caplog.text):
        assert MARKER not in text


def test_a_scored_run_copies_no_outside_file(hostile, pairs, tmp_path, capsys, monkeypatch):
    """score (not --check-only) writes submission_check.json and the run's copies; the evaluate phase is stubbed
    (no scorer here), so what matters is what was written: no byte of the secret anywhere."""
    from clonebench.external import score_folders

    manifest, root, _ = pairs
    _, folder, ids = hostile
    monkeypatch.setattr(score_folders, "run_evaluations", lambda settings, jobs: [None] * len(jobs))
    output = tmp_path / "scores"
    cli(["score", "--manifest", str(manifest), "--root", str(root), "--variant", "all", "--generated",
         str(folder), "--output", str(output), "--device", "cpu"])
    captured = capsys.readouterr()
    check = output / "submission_check.json"
    assert check.is_file(), captured.err
    problems = json.loads(check.read_text())["tasks"][0]["problems"]
    assert "outside the folder" in problems[ids[1]]["problem"]
    written = [p for p in output.rglob("*") if p.is_file()]
    assert written
    for path in written:
        assert MARKER.encode() not in path.read_bytes(), path
    assert MARKER not in captured.out + captured.err


def test_the_bound_is_a_setting_and_under_it_nothing_changes(hostile):
    pair_set, folder, ids = hostile
    loose = {f.output_id: f for f in check_folder(folder, pair_set, max_clip_seconds=4 * 3600).files}
    assert loose[ids[7]].kind == "unreadable" and "truncated" in loose[ids[7]].problem  # then: full validation
    tight = {f.output_id: f for f in check_folder(folder, pair_set, max_clip_seconds=0.1).files}
    assert tight[ids[0]].kind == "too_long"
    assert {f.output_id: f.kind for f in check_folder(folder, pair_set).files}[ids[0]] is None


def test_the_default_bound_covers_rvcbench_long_tasks_and_matches_the_config():
    import yaml

    config = yaml.safe_load((Path(__file__).parents[2] / "configs/evaluation/default.yaml").read_text())
    assert config["max_clip_seconds"] == DEFAULT_MAX_CLIP_SECONDS
    assert 600 <= DEFAULT_MAX_CLIP_SECONDS < 3600  # 10 min: rvcbench's longtext clips run a few minutes


def test_header_duration_reads_declared_length_from_header_and_file_size():
    data = _long_header(2.5, real_frames=20000)
    assert wav_header_duration(data, len(data)) == pytest.approx(2.5)
    assert wav_header_duration(data[:64], 64) == pytest.approx(2.5)                    # a header only: declared
    streamed = data[:40] + struct.pack("<I", 0xFFFFFFFF) + data[44:]
    assert wav_header_duration(streamed, len(streamed)) == pytest.approx(2.5)         # placeholder: the bytes there
    assert wav_header_duration(b"not a wav at all", 16) is None


def test_evaluate_phase_refuses_a_long_clip_naming_file_duration_and_key(tmp_path):
    from clonebench.core.errors import ClonebenchError
    from clonebench.evaluate.protocols.base import ScoreItem
    from clonebench.evaluate.inputs import refuse_long_clips

    short, long = tmp_path / "short.wav", tmp_path / "long.wav"
    _wav(short)
    long.write_bytes(_long_header(2 * 3600, real_frames=8000 * 2 * 3600 // 1000))
    item = lambda p: ScoreItem(sample_id=p.stem, pair_id=p.stem, speaker_id="s", generated_path=p,
                               generated_sha256="x", target_path=None, target_sha256="y", target_text="t",
                               language="EN")
    refuse_long_clips([item(short)], 1200.0)
    with pytest.raises(ClonebenchError) as info:
        refuse_long_clips([item(short), item(long)], 1200.0)
    message = str(info.value)
    assert str(long) in message and "evaluation.max_clip_seconds" in message and "raise the bound" in message


@given(st.binary(max_size=600))
def test_arbitrary_bytes_are_accepted_or_classified_and_nothing_is_written(pairs, tmp_path_factory, data):
    _, _, pair_set = pairs
    base = tmp_path_factory.mktemp("fuzz")
    folder = base / "submitted"
    folder.mkdir()
    oid = pair_set.ids()[0]
    (folder / f"{oid}.wav").write_bytes(data)
    before = sorted(p.relative_to(base) for p in base.rglob("*"))
    check = check_folder(folder, pair_set)
    entry = {f.output_id: f for f in check.files}[oid]
    assert entry.ok or entry.kind in ("unreadable", "too_long", "empty", "non_finite", "leak")
    assert sorted(p.relative_to(base) for p in base.rglob("*")) == before
    json.dumps(check.as_dict())
