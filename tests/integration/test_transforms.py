"""Derived tasks' audio (core-v1's compression-* and narrowband): the transformed WAV equals, byte for byte, both
rvcbench 2.2.1's own ``transform_audio`` and ffmpeg run by hand with its arguments, for every transform in the
suite file; originals are never touched; a missing encoder is refused; derived items score the processed clone
against the unprocessed one, end to end through the real encoders and the real scorers."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
import rvcbench
import soundfile as sf
from rvcbench.benchmark.submission import transform_audio

from clonebench.core.errors import ConfigError, DependencyError
from clonebench.core.hashing import sha256_file
from clonebench.evaluate.derived import derive_items
from clonebench.evaluate.protocols.transform import Transform, check_ffmpeg, fingerprint, transform_wav
from tests.conftest import score_item

SUITE = Path(rvcbench.__file__).parent / "suites" / "core_v1" / "suite.json"
TASKS = [t for t in json.loads(SUITE.read_text())["tasks"] if "transform" in t]
QUIET = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y"]
ENCODERS = {"mp3": ("libmp3lame", ".mp3"), "aac": ("aac", ".m4a"), "opus": ("libopus", ".ogg")}


def by_hand(source: Path, folder: Path, spec: dict) -> Path:
    """ffmpeg run as rvcbench's transform_audio runs it (its arguments, written out here)."""
    rate = str(spec.get("sample_rate", 24000))
    folder.mkdir(parents=True)
    if spec["kind"] == "codec":
        encoder, suffix = ENCODERS[spec["codec"]]
        middle = folder / f"clip{suffix}"
        encode = [*QUIET, "-i", str(source), "-ac", "1", "-ar", rate, "-c:a", encoder, "-b:a", spec["bitrate"],
                  str(middle)]
    else:
        middle = folder / "clip_8k.wav"
        encode = [*QUIET, "-i", str(source), "-ac", "1", "-af", "highpass=f=300,lowpass=f=3400", "-ar", "8000",
                  "-c:a", "pcm_s16le", str(middle)]
    out = folder / "clip.wav"
    subprocess.run(encode, check=True)
    subprocess.run([*QUIET, "-i", str(middle), "-ac", "1", "-ar", rate, "-c:a", "pcm_s16le", str(out)], check=True)
    return out


@pytest.fixture(scope="module")
def clone(human_speech, tmp_path_factory) -> Path:
    """A 'generated' clip as servers return them: 44.1 kHz stereo float, from real LibriVox speech."""
    from tests.conftest import write_variant

    source, text = next(iter(human_speech["librivox"].items()))
    path = write_variant(source, "44k1_float", tmp_path_factory.mktemp("clone") / "clone.wav")
    path.with_suffix(".txt").write_text(text)
    return path


def test_the_suite_has_every_transform_kind():
    kinds = {(t["transform"]["kind"], t["transform"].get("codec")) for t in TASKS}
    assert kinds == {("codec", "mp3"), ("codec", "aac"), ("codec", "opus"), ("narrowband", None)}


@pytest.mark.parametrize("task", TASKS, ids=[t["task"] for t in TASKS])
def test_transformed_audio_equals_rvcbench_and_ffmpeg_by_hand(task, clone, tmp_path):
    before = sha256_file(clone)
    ours = tmp_path / "run" / "audio" / "clip.wav"
    digest = transform_wav(clone, ours, Transform.from_spec(task["transform"]))
    upstream = tmp_path / "upstream" / "clip.wav"
    (tmp_path / "upstream_work").mkdir()
    upstream.parent.mkdir()
    transform_audio(clone, upstream, task["transform"], tmp_path / "upstream_work")
    assert digest == sha256_file(ours) == sha256_file(upstream) == sha256_file(by_hand(clone, tmp_path / "hand",
                                                                                       task["transform"]))
    assert sha256_file(clone) == before  # the original is only read
    assert sorted(p.name for p in ours.parent.iterdir()) == ["clip.wav"]  # no intermediate or partial file left
    info = sf.info(str(ours))
    assert (info.channels, info.samplerate, info.subtype) == (1, task["transform"]["sample_rate"], "PCM_16")


def test_transform_blocks_are_validated():
    with pytest.raises(ConfigError, match=r"transform.codec='flac'"):
        Transform.from_spec({"kind": "codec", "codec": "flac", "bitrate": "64k"})
    with pytest.raises(ConfigError, match=r"bitrate=64"):
        Transform.from_spec({"kind": "codec", "codec": "mp3", "bitrate": 64})
    with pytest.raises(ConfigError, match=r"kind='reverb'"):
        Transform.from_spec({"kind": "reverb"})
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['bitrate'\]"):
        Transform.from_spec({"kind": "narrowband", "bitrate": "8k"})
    assert Transform.from_spec({"kind": "narrowband"}).sample_rate == 24000  # upstream's default


def test_the_fingerprint_names_ffmpeg_and_the_encoder_libraries():
    block = fingerprint(Transform.from_spec({"kind": "codec", "codec": "opus", "bitrate": "16k"}))
    assert block["ffmpeg"]["ffmpeg"].startswith("ffmpeg version ")
    assert block["ffmpeg"]["libraries"]["libavcodec"]
    assert block["ffmpeg"]["encoders"]["libopus"]["version"].startswith("libopus ")
    assert block["ffmpeg"]["encoders"]["libmp3lame"]["version"]
    assert "-c:a libopus -b:a 16k" in block["commands"][0]


def _fake_path(tmp_path: Path, script: str | None) -> str:
    """A PATH whose ffmpeg is ``script`` (None: no ffmpeg at all), with the other tools ldd/ffmpeg scripts need."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in ("sh", "grep", "ldd"):
        if shutil.which(tool):
            os.symlink(shutil.which(tool), folder / tool)
    if script is not None:
        (folder / "ffmpeg").write_text(script)
        (folder / "ffmpeg").chmod(stat.S_IRWXU)
    return str(folder)


def test_missing_ffmpeg_or_encoder_is_refused_naming_the_fix(tmp_path, monkeypatch):
    opus = Transform.from_spec({"kind": "codec", "codec": "opus", "bitrate": "24k"})
    real = shutil.which("ffmpeg")
    # an ffmpeg built without libopus: the real program, its encoder list without that line
    monkeypatch.setenv("PATH", _fake_path(tmp_path, f'#!/bin/sh\n"{real}" "$@" | grep -v libopus\n'))
    with pytest.raises(DependencyError, match=r"encoder\(s\) \['libopus'\].*apt-get install ffmpeg"):
        check_ffmpeg([opus])
    check_ffmpeg([Transform.from_spec({"kind": "codec", "codec": "mp3", "bitrate": "64k"})])  # mp3 is there
    shutil.rmtree(tmp_path / "bin")
    monkeypatch.setenv("PATH", _fake_path(tmp_path, None))
    with pytest.raises(DependencyError, match="ffmpeg command, which is not on PATH"):
        check_ffmpeg([opus])


def test_the_source_clip_is_never_the_destination(clone):
    with pytest.raises(ValueError, match="never overwritten"):
        transform_wav(clone, clone, Transform.from_spec({"kind": "narrowband"}))


def test_derived_items_target_the_unprocessed_clone(clone, tmp_path):
    ok = score_item(clone, target=next(Path("/usr/share/pocketsphinx/test/data/cards").glob("*.wav")), text="t")
    changed = tmp_path / "changed.wav"
    shutil.copyfile(clone, changed)
    stale = score_item(changed, sample_id="stale")
    changed.write_bytes(changed.read_bytes()[:-2])
    items = derive_items("audioshift", Transform.from_spec({"kind": "narrowband"}),
                         {"ok": ok, "failed": None, "stale": stale}, tmp_path / "derived")
    assert [d.sample_id for d in items] == ["ok", "failed", "stale"]
    derived = items[0].item
    assert derived.target_path == clone and derived.target_sha256 == ok.generated_sha256
    assert derived.generated_path == tmp_path / "derived" / "s" / "clone.wav"
    assert derived.generated_sha256 == sha256_file(derived.generated_path)
    assert (derived.target_text, derived.language, derived.pair_id) == (ok.target_text, ok.language, ok.pair_id)
    assert items[1].item is None and items[1].error == "Source sample failed in audioshift"
    assert items[2].item is None and "has sha256" in items[2].error


@pytest.mark.slow
def test_compressed_clips_score_end_to_end_through_real_encoders_and_scorers(clone, tmp_path, ecapa):
    from clonebench.core.hashing import HashCache
    from clonebench.evaluate.execution.chunk import score_chunk
    from clonebench.evaluate.scorers.mcd import MCDScorer
    from clonebench.evaluate.scorers.stoi import STOIScorer
    from clonebench.evaluate.scorers.whisper_faster import FasterWhisperScorer

    text = clone.with_suffix(".txt").read_text()
    items = {}
    chosen = ("compression-mp3-64k", "compression-aac-32k", "compression-opus-16k", "compression-narrowband")
    for task in [t for t in TASKS if t["task"] in chosen]:  # every encoder and the telephone band
        check_ffmpeg([Transform.from_spec(task["transform"])])
        source = score_item(clone, text=text, language="EN", sample_id=task["task"])
        [derived] = derive_items("audioshift", Transform.from_spec(task["transform"]), {task["task"]: source},
                                 tmp_path / task["task"])
        items[task["task"]] = derived.item
    whisper = FasterWhisperScorer({"backend": "faster_whisper", "model": "tiny.en", "local_path": None,
                                   "sha256": None, "normalisation": "ascii_punctuation_removed_v2",
                                   "compute_type": "auto", "allow_hub": False}, "cpu", HashCache(None))
    scores = {name: {} for name in items}
    for scorer in (STOIScorer({}, "cpu", HashCache(None)), MCDScorer({}, "cpu", HashCache(None)), ecapa, whisper):
        if scorer is not ecapa:
            scorer.load()
        for record in score_chunk(scorer, list(items.values()))[0]:
            assert record.ok, record.error
            scores[record.sample_id].update(record.values)
    whisper.release()
    for name, values in scores.items():
        assert 0.5 < values["stoi"] < 1.0, (name, values)   # processed, still intelligible
        assert values["sim"] > 0.6 and values["mcd"] > 0.0, (name, values)
        assert values["wer"] <= 0.5 and values["hypothesis"], (name, values)
    # the target is the unprocessed clone itself: 64 kb/s MP3 of it is near-identical to it (measured 0.9997), the
    # telephone band less so (measured 0.990: STOI's bands stop near 4.3 kHz, so the band loss is small)
    assert scores["compression-mp3-64k"]["stoi"] > 0.995
    assert scores["compression-narrowband"]["stoi"] < scores["compression-mp3-64k"]["stoi"]
    assert scores["compression-narrowband"]["mcd"] > scores["compression-mp3-64k"]["mcd"]


def test_a_derived_run_records_each_processed_clip_and_every_failure(clone, tmp_path, monkeypatch):
    """A derived task's own run (suite.derived_run): the processed clip with its own sha256, its target the
    unprocessed clone (path and sha256), the transform record; a source sample with no clip fails with rvcbench's
    exact error, a changed source clip and a clip ffmpeg refuses fail with their reasons."""
    import clonebench.evaluate.derived as derived_module
    from clonebench.core.records import AudioRef, PairRow, Sample
    from clonebench.data.audio import validate_wav
    from clonebench.evaluate.inputs import load_requested
    from clonebench.generate.recorder import RunRecorder
    from clonebench.suite.derived_run import record_derived

    def sample(name: str) -> Sample:
        row = PairRow("d", "test", name, "s", "p.wav", "t.wav", "p", "t", "EN", "EN", len(name))
        return Sample(row, 0, f"id-{name}", AudioRef("p", "0" * 64), AudioRef("t", "1" * 64), 42)

    samples = [sample(n) for n in ("ok", "failed", "changed", "refused")]
    source_dir = tmp_path / "tasks" / "audioshift"
    source = RunRecorder(source_dir, {"run_name": "m/audioshift"})
    source.set_samples(samples)
    data = clone.read_bytes()
    for s in samples:
        if s.pair_id == "failed":
            source.failed(s, "permanent", "HTTP 500", 1)
        else:
            source.save_external(s, data, validate_wav(data))
    source.finish_unrequested({"kind": "test"}, {"protocol": "test"}, seed=42, seed_policy="fixed")
    (source_dir / samples[2].audio_relpath()).write_bytes(data[:-2])  # changed after it was generated
    real = derived_module.transform_wav

    def refusing(src, destination, transform):
        if "id-refused" in str(src):
            raise RuntimeError(f"ffmpeg failed on {src}: refused")
        return real(src, destination, transform)
    monkeypatch.setattr(derived_module, "transform_wav", refusing)
    run_dir = tmp_path / "tasks" / "compression-narrowband"
    run = record_derived(run_dir, {"run_name": "m/compression-narrowband"}, "compression-narrowband", "audioshift",
                         source_dir, samples, Transform.from_spec({"kind": "narrowband"}))
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    rows = {s["pair_id"]: s for s in manifest["samples"]}
    assert manifest["status"] == "partial" and run.clips == 1 and manifest["counts"] == {"generated": 1,
                                                                                      "generation_failed": 3}
    assert rows["failed"]["error"] == "Source sample failed in audioshift"
    assert rows["failed"]["error_class"] == "source_failed"
    assert rows["changed"]["error_class"] == "source_unusable"
    assert "changed since generation" in rows["changed"]["error"]
    assert rows["refused"]["error_class"] == "transform_failed" and "refused" in rows["refused"]["error"]
    processed = run_dir / rows["ok"]["audio_path"]
    assert rows["ok"]["audio_sha256"] == sha256_file(processed) != sha256_file(clone)
    assert rows["ok"]["target_sha256"] == sha256_file(clone) and rows["ok"]["sample_rate"] == 24000
    assert rows["ok"]["audio_bytes"] == processed.stat().st_size and rows["ok"]["frames"] > 0
    provenance = manifest["generation_provenance"]
    assert provenance["transform"]["transform"] == {"kind": "narrowband", "sample_rate": 24000}
    assert provenance["sources"]["id-ok"]["sha256"] == sha256_file(clone)
    assert manifest["derived_from"]["task"] == "audioshift" and manifest["seed_policy"] == "fixed"
    assert manifest["derived_from"]["run_manifest_sha256"] == sha256_file(source_dir / "run_manifest.json")
    requested, record = load_requested(run_dir, run.samples)  # scored like any run
    [item] = [r.item for r in requested if r.item is not None]
    assert item.generated_path == processed.resolve() and item.generated_sha256 == rows["ok"]["audio_sha256"]
    assert item.target_path == (source_dir / samples[0].audio_relpath()).resolve()
    assert item.target_sha256 == sha256_file(clone) and record["run_dir"] == str(run_dir)
