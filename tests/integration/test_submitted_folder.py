"""Every class of bad file in a folder made outside clonebench gets its own per-id message before anything is
scored (clonebench.external.submitted), and ``clonebench score --check-only`` prints them and writes nothing."""

from __future__ import annotations

import io
import shutil

import numpy as np
import pytest
import soundfile as sf

from clonebench.cli.main import main as cli
from clonebench.data.manifest import Selection
from clonebench.demo.dataset import scale_manifest
from clonebench.external.pair_sets import from_manifest
from clonebench.external.submitted import check_folder


def _wav(path, data, rate=24000, subtype="PCM_16"):
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), data, rate, subtype=subtype)


def _tone(seconds=0.5, freq=220.0, rate=24000):
    t = np.arange(int(seconds * rate)) / rate
    return 0.2 * np.sin(2 * np.pi * freq * t)


@pytest.fixture
def case(dataset, tmp_path):
    manifest = scale_manifest(dataset / "metadata.json", 16)
    pair_set = from_manifest(manifest, dataset, selection=Selection(None))
    folder = tmp_path / "outputs"
    folder.mkdir()
    ids = pair_set.ids()
    s = list(pair_set.samples)
    _wav(folder / f"{ids[0]}.wav", _tone())                                         # good
    # ids[1]: missing
    _wav(folder / f"{s[2].pair_id}.wav", _tone())                                   # wrong id: no task prefix
    _wav(folder / f"{ids[3].upper()}.wav", _tone())                                 # wrong id: letter case
    _wav(folder / f"{ids[4]}.wav", _tone(freq=300))                                 # ambiguous: two layouts
    _wav(folder / "espeak_demo" / f"{s[4].pair_id}.wav", _tone(freq=400))
    _wav(folder / "espeak_demo" / f"{s[5].pair_id}.wav", _tone())                   # good, nested layout
    (folder / f"{ids[6]}.wav").write_bytes(b"this is not audio at all")             # unreadable
    (folder / f"{ids[7]}.wav").write_bytes(b"")                                     # empty: 0 bytes
    _wav(folder / f"{ids[8]}.wav", np.zeros(0))                                     # empty: no frames
    nan = _tone()
    nan[100] = np.nan
    buffer = io.BytesIO()
    sf.write(buffer, nan, 24000, subtype="FLOAT", format="WAV")
    (folder / f"{ids[9]}.wav").write_bytes(buffer.getvalue())                        # non-finite
    shutil.copyfile(s[10].target.path, folder / f"{ids[10]}.wav")                   # leak: the target's bytes
    target, rate = sf.read(str(s[3].target.path))
    _wav(folder / f"{ids[11]}.wav", target, rate, subtype="FLOAT")                  # leak: re-encoded target
    shutil.copyfile(s[12].prompt.path, folder / f"{ids[12]}.wav")                   # warning: the reference
    _wav(folder / f"{ids[13]}.flac", _tone())                                       # wrong id: extension
    for k in (14, 15):
        _wav(folder / f"{ids[k]}.wav", _tone(freq=200 + k))
    (folder / "notes.txt").write_text("generation log\n")                           # extra
    _wav(folder / "unrelated.wav", _tone())                                         # extra
    (folder / ".DS_Store").write_bytes(b"\0")                                       # hidden: ignored
    return manifest, dataset, pair_set, folder


def test_every_problem_is_named_per_id(case):
    _, _, pair_set, folder = case
    check = check_folder(folder, pair_set)
    by_id = {f.output_id: f for f in check.files}
    ids = pair_set.ids()
    kinds = {oid: by_id[oid].kind for oid in ids}
    assert kinds == {ids[0]: None, ids[1]: "missing", ids[2]: "wrong_id", ids[3]: "wrong_id", ids[4]: "ambiguous",
                     ids[5]: None, ids[6]: "unreadable", ids[7]: "empty", ids[8]: "empty", ids[9]: "non_finite",
                     ids[10]: "leak", ids[11]: "leak", ids[12]: None, ids[13]: "wrong_id", ids[14]: None,
                     ids[15]: None}
    assert "without the 'espeak_demo__' prefix" in by_id[ids[2]].problem
    assert "letter case" in by_id[ids[3]].problem and "'.flac'" in by_id[ids[13]].problem
    assert "byte-identical to the hidden target recording" in by_id[ids[10]].problem
    assert "sample-identical" in by_id[ids[11]].problem and "NaN" in by_id[ids[9]].problem
    assert "0 bytes" in by_id[ids[7]].problem and "no audio frames" in by_id[ids[8]].problem
    assert by_id[ids[12]].warnings and "reference recording" in by_id[ids[12]].warnings[0]
    assert check.extra == ["notes.txt", "unrelated.wav"]
    counts = check.counts()
    assert counts["usable"] == 5 and counts["leak"] == 2 and counts["wrong_id"] == 3 and counts["extra"] == 2


def test_score_check_only_prints_every_problem_and_writes_nothing(case, tmp_path, capsys):
    manifest, root, pair_set, folder = case
    output = tmp_path / "scores"
    code = cli(["score", "--manifest", str(manifest), "--root", str(root), "--variant", "all", "--generated",
                str(folder), "--output", str(output), "--check-only"])
    out = capsys.readouterr().out
    assert code == 1 and not output.exists()
    ids = pair_set.ids()
    for oid, kind in ((ids[1], "missing"), (ids[2], "wrong_id"), (ids[4], "ambiguous"), (ids[6], "unreadable"),
                      (ids[7], "empty"), (ids[9], "non_finite"), (ids[10], "leak")):
        assert f"{oid}: {kind}: " in out
    assert "extra file (matches no id): notes.txt" in out and "5/16 usable" in out


def test_a_folder_without_any_usable_file_is_refused(case, tmp_path, capsys):
    manifest, root, _, _ = case
    empty = tmp_path / "nothing"
    empty.mkdir()
    (empty / "x.wav").write_bytes(b"")
    code = cli(["score", "--manifest", str(manifest), "--root", str(root), "--variant", "all", "--generated",
                str(empty), "--output", str(tmp_path / "out")])
    assert code == 2 and "no usable audio for any id" in capsys.readouterr().err


def test_processed_copies_of_the_answer_are_leaks_and_other_speech_is_not(case, tmp_path, human_speech):
    import os

    from scipy.signal import resample_poly

    _, _, pair_set, _ = case
    folder = tmp_path / "processed"
    ids, s = pair_set.ids(), list(pair_set.samples)
    target, rate = sf.read(str(s[0].target.path))
    noise = np.random.default_rng(0).normal(0, 0.002, len(target))
    _wav(folder / f"{ids[0]}.wav", 0.5 * target + noise, rate)                                  # quieter, noisy
    _wav(folder / f"{ids[1]}.wav", resample_poly(sf.read(str(s[1].target.path))[0], 2, 3), 16000)  # resampled
    delayed, rate2 = sf.read(str(s[2].target.path))
    _wav(folder / f"{ids[2]}.wav", np.concatenate([np.zeros(int(0.05 * rate2)), delayed]), rate2)  # codec-like delay
    shutil.copyfile(next(iter(human_speech["librivox"])), folder / f"{ids[3]}.wav")  # real speech, not an answer
    shutil.copyfile(s[4].prompt.path, folder / f"{ids[4]}.wav")                       # same voice, other sentence
    _wav(folder / f"{ids[5]}.wav", _tone())
    shutil.copyfile(folder / f"{ids[5]}.wav", folder / f"{ids[6]}.wav")               # one file for two ids
    os.mkfifo(folder / f"{ids[7]}.wav")                                               # never opened
    with open(folder / f"{ids[8]}.wav", "wb") as handle:                             # sparse, over the limit
        handle.truncate(2 * 1024 ** 3 + 1)
    (folder / b"bad-\xff-name.wav".decode("utf-8", "surrogateescape")).write_bytes(b"x")
    check = check_folder(folder, pair_set)
    by_id = {f.output_id: f for f in check.files}
    assert [by_id[ids[k]].kind for k in range(9)] == ["leak", "leak", "leak", None, None, None, None, "unreadable",
                                                      "unreadable"]
    assert all("processed copy" in by_id[ids[k]].problem for k in range(3))
    assert "the same audio as the file of " + ids[5] in by_id[ids[6]].warnings[0]
    assert "not a regular file" in by_id[ids[7]].problem and "over the" in by_id[ids[8]].problem
    assert check.extra == ["bad-\\xff-name.wav"]
    import json

    json.dumps(check.as_dict(), ensure_ascii=False).encode("utf-8")  # writable as the run's record
