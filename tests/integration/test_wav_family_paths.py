"""Every WAV a model writes goes through the real paths: a submitted folder (``score --check-only``), the data root
(input validation, ``clonebench manifest --root``, and the references a generate run sends), server responses (the
generate phase saves and records them, the evaluate phase scores them), and scores equal to rvcbench 2.2.1's own
scorer classes. The variants (ffmpeg's and soundfile's WAV, WAVEX and RF64 writers) come from
``tests/unit/test_wav_family.py``.
"""

from __future__ import annotations

import csv
import json
import shutil
import threading

import numpy as np
import pytest
import soundfile as sf

from clonebench.cli.main import main as cli
from clonebench.core.hashing import HashCache, sha256_bytes, sha256_file
from clonebench.core.records import RunStatus
from clonebench.data.manifest import Selection, build_samples
from clonebench.demo.dataset import scale_manifest
from clonebench.external.pair_sets import from_manifest
from clonebench.external.submitted import check_folder
from clonebench.generate.journal import final_outcomes, read_events
from tests.conftest import LIBRIVOX, OFFLINE_SCORERS, compose, generate_run, score_item
from tests.integration.test_cli_manifest import clonebench as clonebench_cli
from tests.unit.test_wav_family import NAMES, write_variants

pytestmark = pytest.mark.slow

# the variants a slower path takes: WAVEX PCM_24 and FLOAT, 96 kHz, stereo (16-bit and 48 kHz float), RF64 (ffmpeg's
# and soundfile's), 8-bit and 64-bit float
SUBSET = ["ffmpeg-pcm_s24le", "ffmpeg-pcm_f32le", "ffmpeg-pcm_s16le-96k", "ffmpeg-pcm_s16le-stereo",
          "ffmpeg-pcm_f32le-48k-stereo", "ffmpeg-rf64-pcm_s16le", "soundfile-RF64-DOUBLE", "soundfile-WAVEX-PCM_U8"]
# the target of the parity pairs: another sentence of the same reader, a plain 16 kHz PCM_16 RIFF/WAVE as distributed
TARGET = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0880.wav"


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    return write_variants(tmp_path_factory.mktemp("wav_family_paths"))


def described(path) -> tuple:
    info = sf.info(str(path))
    return info.samplerate, info.frames, info.channels, info.subtype


# -- (a) a submitted folder ---------------------------------------------------------------------------------------

def test_a_submitted_folder_of_every_variant_is_usable(dataset, variants, tmp_path, capsys):
    manifest = scale_manifest(dataset / "metadata.json", len(NAMES))
    pair_set = from_manifest(manifest, dataset, selection=Selection(None))
    folder = tmp_path / "outputs"
    folder.mkdir()
    chosen = dict(zip(pair_set.ids(), NAMES))
    for oid, name in chosen.items():
        shutil.copyfile(variants[name].path, folder / f"{oid}.wav")
    check = check_folder(folder, pair_set)
    assert check.lines() == [] and check.counts()["usable"] == len(NAMES)
    for f in check.files:
        assert f.ok, (chosen[f.output_id], f.kind, f.problem)
        assert (f.info.sample_rate, f.info.frames, f.info.channels, f.info.subtype) == \
            described(variants[chosen[f.output_id]].path)
    output = tmp_path / "scores"
    code = cli(["score", "--manifest", str(manifest), "--root", str(dataset), "--variant", "all", "--generated",
                str(folder), "--output", str(output), "--check-only"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"{len(NAMES)}/{len(NAMES)} usable" in out and "unreadable" not in out and not output.exists()


# -- (b) the data root ----------------------------------------------------------------------------------------------

def variant_dataset(root, variants, names) -> tuple:
    """A dataset whose prompt and target recordings are the variants: row i's prompt is names[i], its target
    names[i + 1]; two speakers. Returns (manifest, {file name: variant name})."""
    rows, files = [], {}
    for i, name in enumerate(names):
        for role, source in (("prompt", name), ("target", names[(i + 1) % len(names)])):
            relative = f"audios/{i:02d}_{role}_{source}.wav"
            (root / "audios").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(variants[source].path, root / relative)
            files[relative] = source
        speaker = f"reader_{i % 2}"
        rows.append({"dataset_name": "espeak_demo", "split": "default", "pair_id": f"wav-family-{i:03d}",
                     "speaker_id": speaker, "manifest_variant": "speaker", "source_manifest": "wav_family.json",
                     "source_row": i, "source_index": i,
                     "prompt_file_name": f"audios/{i:02d}_prompt_{name}.wav",
                     "target_file_name": f"audios/{i:02d}_target_{names[(i + 1) % len(names)]}.wav",
                     "prompt_text": "She was sensible and clever.", "target_text": "Kick the ball straight.",
                     "prompt_language": "EN", "target_language": "EN",
                     "prompt_sha256": sha256_file(root / f"audios/{i:02d}_prompt_{name}.wav"),
                     "target_sha256": sha256_file(root / f"audios/{i:02d}_target_{names[(i + 1) % len(names)]}.wav")})
    manifest = root / "metadata.json"
    manifest.write_text(json.dumps({"schema": "clonebench.pairs/v1", "subset": "wav_family", "pairs": rows}))
    return manifest, files


def test_a_data_root_of_every_variant_passes_input_validation(variants, tmp_path):
    root = tmp_path / "data"
    manifest, files = variant_dataset(root, variants, NAMES)
    samples = build_samples(manifest, root, Selection(None), 42)
    assert len(samples) == len(NAMES)
    for sample in samples:
        for ref in (sample.prompt, sample.target):
            assert ref.sha256 == sha256_file(ref.path)
    ok = clonebench_cli("manifest", str(manifest), "--root", str(root), "--variant", "all")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["audio_verified"] is True and len(json.loads(ok.stdout)["samples"]) == len(NAMES)
    # the same path refuses a truncated RF64 recording (the rule is applied, not skipped), naming the file
    rows = json.loads(manifest.read_text())
    row = next(r for r in rows["pairs"] if files[r["prompt_file_name"]] == "ffmpeg-rf64-pcm_s16le")
    cut = (root / row["prompt_file_name"]).read_bytes()[:-1000]
    (root / row["prompt_file_name"]).write_bytes(cut)
    row["prompt_sha256"] = sha256_bytes(cut)
    manifest.write_text(json.dumps(rows))
    bad = clonebench_cli("manifest", str(manifest), "--root", str(root), "--variant", "all")
    assert bad.returncode == 2 and row["prompt_file_name"] in bad.stderr and "truncated WAV" in bad.stderr, bad.stderr


def test_a_generate_run_sends_every_variant_as_the_reference(variants, standin, tmp_path, monkeypatch):
    """The data root's references in each variant go out byte for byte, and the stand-in decodes each one as a
    server does (``read_input_audio``)."""
    from clonebench.standin import voice

    root = tmp_path / "data"
    variant_dataset(root, variants, SUBSET)
    decoded, real = [], voice.reference_style

    def reference_style(audio, text):
        style = real(audio, text)
        decoded.append(sha256_bytes(audio))
        return style

    monkeypatch.setattr(voice, "reference_style", reference_style)
    status, run_dir = generate_run(tmp_path, root, standin.url, "adversary.reference_check=false")
    assert status == RunStatus.GENERATED
    outcomes = final_outcomes(read_events(run_dir / "sample_events.jsonl"))
    assert len(outcomes) == len(SUBSET) and all(o.status.value == "generated" for o in outcomes.values())
    assert sorted(decoded) == sorted(sha256_bytes(variants[name].path.read_bytes()) for name in SUBSET)


# -- (c) server responses -------------------------------------------------------------------------------------------

@pytest.fixture
def answering_variants(monkeypatch, variants):
    """The stand-in answers each synthesis with the next variant's bytes (the Fish protocol is its own; only what
    it synthesizes is replaced)."""
    from clonebench.standin import server as standin_server

    queue, lock = [variants[name].path.read_bytes() for name in SUBSET], threading.Lock()

    def speak(handler, request, style):
        with lock:
            return queue.pop(0)

    monkeypatch.setattr(standin_server.Handler, "_speak", speak)
    return {sha256_bytes(variants[name].path.read_bytes()): name for name in SUBSET}


def test_server_answers_in_every_variant_are_saved_recorded_and_scored(dataset, standin, answering_variants,
                                                                        tmp_path):
    from clonebench.runs.pipeline import run

    cfg = compose("demo", [f"paths.results_dir={tmp_path / 'results'}",
                           f"dataset.manifest_filename={dataset / 'metadata.json'}", f"dataset.root_path={dataset}",
                           f"adversary.endpoint_url={standin.url}/v1/tts", "adversary.reference_check=false",
                           f"adversary.max_samples={len(SUBSET)}", "adversary.retry_initial_delay=0.01",
                           "evaluation.metrics=[stoi]", *OFFLINE_SCORERS])
    run_dir = tmp_path / "results" / "run"
    result = run(cfg, run_dir, "configs/demo.yaml (test)")
    assert result.generation == RunStatus.GENERATED and result.evaluation["status"] == "complete"
    outcomes = final_outcomes(read_events(run_dir / "sample_events.jsonl"))
    assert len(outcomes) == len(SUBSET)
    saved = {}
    for outcome in outcomes.values():
        assert outcome.status.value == "generated", outcome
        data = (run_dir / outcome.audio_path).read_bytes()
        assert sha256_bytes(data) == outcome.audio_sha256
        name = answering_variants[outcome.audio_sha256]  # saved byte for byte as the server sent it
        saved[name] = outcome
        assert (outcome.sample_rate, outcome.frames, outcome.channels) == described(run_dir / outcome.audio_path)[:3]
    assert sorted(saved) == sorted(SUBSET)
    with open(run_dir / "generation_sample_metrics.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(SUBSET)
    assert all(not r["errors"] and np.isfinite(float(r["stoi"])) for r in rows), rows  # scored (stoi may be < 0)


# -- (d) scores equal to the peer's scorer classes -----------------------------------------------------------------

def test_scores_of_every_variant_equal_the_peers_scorer_classes(ecapa, peer_assets, variants):
    """Each variant as the generated clip against a plain-WAV recording of another sentence by the same reader:
    clonebench's ECAPA (sim, sva), MCD and STOI scorers give exactly (abs 0) what rvcbench's SpeakerScorer,
    MCDScorer and STOIScorer give."""
    from rvcbench.evaluation.scorers import ScoreInput

    from clonebench.evaluate.scorers.mcd import MCDScorer
    from clonebench.evaluate.scorers.stoi import STOIScorer
    from tests.peer import peer_scorer, process_state_kept

    target = TARGET
    items = [score_item(variants[name].path, target, sample_id=name) for name in SUBSET]
    ours = {name: {} for name in SUBSET}
    for scorer in (ecapa, MCDScorer({}, "cpu", HashCache(None)), STOIScorer({}, "cpu", HashCache(None))):
        if scorer is not ecapa:
            scorer.load()
        try:
            for record in scorer.score_batch(items):
                assert record.ok, (record.sample_id, record.error)
                ours[record.sample_id].update(record.values)
        finally:
            if scorer is not ecapa:
                scorer.release()
    theirs = {name: {} for name in SUBSET}
    from clonebench.evaluate.execution.exact_conv import torch_threads
    from clonebench.evaluate.scorers.ecapa import PROTOCOL_THREADS

    # the peer as it runs on a 2-core host: torch's default two threads, whatever an earlier test left this process at
    with process_state_kept(), torch_threads(PROTOCOL_THREADS):
        for group in ("sim", "mcd", "stoi"):
            scorer = peer_scorer(group, peer_assets)
            try:
                for name in SUBSET:
                    theirs[name].update(scorer.score(ScoreInput(target, variants[name].path, "", "en")))
            finally:
                scorer.close()
    for name in SUBSET:
        assert ours[name]["sim"] == theirs[name]["sim"], (name, ours[name]["sim"], theirs[name]["sim"])
        assert ours[name]["sva"] == float(theirs[name]["sva"]), name
        assert ours[name]["mcd"] == theirs[name]["mcd"], (name, ours[name]["mcd"], theirs[name]["mcd"])
        assert ours[name]["stoi"] == theirs[name]["stoi"], (name, ours[name]["stoi"], theirs[name]["stoi"])
    # a container holding the same samples (16-bit speech stored losslessly as PCM_24, float, RF64 or double) scores
    # the same: the container never reaches a metric
    lossless = [ours[name] for name in ("ffmpeg-pcm_s24le", "ffmpeg-pcm_f32le", "ffmpeg-rf64-pcm_s16le",
                                        "soundfile-RF64-DOUBLE")]
    assert all(values == lossless[0] for values in lossless), lossless
