"""Seed-TTS-eval's English WER scorer (``seed_wer_en``) end to end on a tiny RANDOMLY INITIALISED transformers
Whisper folder (tests/tiny_models.py) and eSpeak NG clips: the real loading code (local folder, sha256 lock,
``from_pretrained``), the benchmark's audio path (soundfile, scipy resampling of eSpeak's 22.05 kHz to 16 kHz) and
its text rule. The numbers mean nothing; they must be finite, deterministic and follow the rule."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("transformers", reason="seed_wer_en needs transformers (the eval extra)")
pytest.importorskip("zhon", reason="seed_wer_en needs zhon (the eval extra)")

from clonebench.core.hashing import HashCache, sha256_file  # noqa: E402
from clonebench.evaluate.protocols.assets import AssetError  # noqa: E402
from clonebench.seedtts.text import seedtts_wer  # noqa: E402
from tests.conftest import espeak_clips, score_item  # noqa: E402
from tests.peer import one_torch_thread  # noqa: E402

TEXTS = ("The quick brown fox jumps over the lazy dog.", "It's a sunny day, isn't it?", "Seven, eight; nine!")


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    from tests.tiny_models import write_tiny_hf_whisper

    return write_tiny_hf_whisper(tmp_path_factory.mktemp("tiny_hf_whisper"))


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    spoken = {f"clip{n}": ("en-us", text) for n, text in enumerate(TEXTS)}
    paths = espeak_clips(tmp_path_factory.mktemp("seedtts_clips"), spoken)
    return list(zip(paths.values(), TEXTS))


def scorer_for(folder, **options):
    from clonebench.seedtts.seedtts_whisper import SeedTTSWhisperScorer

    return SeedTTSWhisperScorer({"local_path": folder, "sha256": sha256_file(folder / "model.safetensors"),
                                 "allow_hub": False, **options}, "cpu", HashCache(None))


def test_scores_espeak_clips_deterministically(tiny_folder, clips):
    items = [score_item(path, text=text, language="en-US") for path, text in clips]
    runs = []
    for _ in range(2):
        scorer = scorer_for(tiny_folder)
        scorer.load()
        try:
            with one_torch_thread():
                runs.append(scorer.score_batch(items))
        finally:
            scorer.release()
    first, again = runs
    assert [r.values for r in first] == [r.values for r in again]
    assert len({r.values["seed_hypothesis_en"] for r in first}) > 1  # the text follows the audio
    for record, (_, text) in zip(first, clips):
        assert record.ok, record.error
        values = record.values
        assert set(values) == {"seed_wer_en", "seed_wer_en_sub", "seed_wer_en_del", "seed_wer_en_ins",
                               "seed_hypothesis_en"}
        assert all(math.isfinite(values[k]) and values[k] >= 0 for k in values if k != "seed_hypothesis_en")
        # the benchmark's rule on the scorer's own transcript gives the recorded numbers
        rule = seedtts_wer(text, values["seed_hypothesis_en"], "en")
        assert values["seed_wer_en"] == rule["wer"] and values["seed_wer_en_sub"] == rule["substitutions"]
        assert values["seed_wer_en_del"] == rule["deletions"] and values["seed_wer_en_ins"] == rule["insertions"]


def test_other_languages_and_empty_references_are_sample_errors(tiny_folder, clips):
    path, _ = clips[0]
    scorer = scorer_for(tiny_folder)
    scorer.load()
    try:
        zh, empty = scorer.score_batch([score_item(path, text="你好", language="zh"),
                                        score_item(path, text="...", language="en")])
    finally:
        scorer.release()
    assert not zh.ok and "seed_wer_zh" in zh.error
    assert not empty.ok and "empty after its text rule" in empty.error


def test_lock_and_sources(tiny_folder, tmp_path):
    scorer = scorer_for(tiny_folder, sha256="0" * 64)
    with pytest.raises(AssetError, match=r"model.safetensors has sha256 [0-9a-f]{64}, the lock says 0{64}"):
        scorer.load()
    from clonebench.seedtts.seedtts_whisper import MODEL_SAFETENSORS_SHA256, SeedTTSWhisperScorer

    offline = SeedTTSWhisperScorer({"local_path": None, "allow_hub": False}, "cpu", HashCache(None))
    assert offline.lock() == MODEL_SAFETENSORS_SHA256
    with pytest.raises(AssetError, match="whisper_local_path and hub downloads are off"):
        offline.load()
    with pytest.raises(AssetError, match="has no model.safetensors"):
        SeedTTSWhisperScorer({"local_path": tmp_path, "allow_hub": False}, "cpu", HashCache(None)).load()
    assert "openai/whisper-large-v3@06f233fe06e7" in offline.version()
    assert offline.protocol()["text_rule"] == "seedtts_process_one_v1"


def test_preflight_names_what_is_missing(tiny_folder):
    from clonebench.seedtts.seedtts_whisper import SeedTTSWhisperScorer

    SeedTTSWhisperScorer.preflight({"local_path": tiny_folder, "allow_hub": False})
    SeedTTSWhisperScorer.preflight({"local_path": None, "allow_hub": True})
    with pytest.raises(AssetError, match="whisper_local_path .*whisper_allow_hub=true"):
        SeedTTSWhisperScorer.preflight({"local_path": None, "allow_hub": False})
