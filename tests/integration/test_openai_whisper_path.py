"""The openai-whisper backend (the reproduction default, ``medium``) on a tiny RANDOMLY INITIALISED checkpoint.

openai-whisper's real weights cannot be fetched offline here, so this checks the code path, not
recognition quality: a checkpoint in openai-whisper's own format (dims + state dict) is sha256-locked and
loaded through ``whisper.load_model``; every window of the random model falls back to sampling, so its
hypotheses show the per-sample seeds at work (the same sample id gives the same text in any batch and order;
another id gives another text); a checkpoint whose sha256 differs from the lock is refused. Equality with the
peer's own WERScorer is ``test_peer_parity.py``'s.
"""

from __future__ import annotations

import pytest

from clonebench.core.hashing import HashCache, sha256_file
from clonebench.evaluate.protocols.assets import AssetError
from tests.conftest import score_item
from tests.peer import one_torch_thread


def options(path, sha, **extra):
    return {"backend": "openai_whisper", "model": "tiny-random", "local_path": path, "sha256": sha,
            "normalisation": "ascii_punctuation_removed_v2", "compute_type": "auto", "allow_hub": False, **extra}


def test_hypotheses_are_a_function_of_the_sample_id(tiny_whisper_checkpoint, human_speech):
    from clonebench.evaluate.scorers.whisper_openai import OpenAIWhisperScorer

    scorer = OpenAIWhisperScorer(options(tiny_whisper_checkpoint, sha256_file(tiny_whisper_checkpoint)), "cpu",
                                 HashCache(None))
    scorer.load()
    try:
        path, text = next(iter(human_speech["librivox"].items()))
        items = [score_item(path, text=text, sample_id=sid) for sid in ("0badc0de" + "0" * 56, "LibriTTS-121-7")]
        with one_torch_thread():
            first = [r.values["hypothesis"] for r in scorer.score_batch(items)]
            again = [r.values["hypothesis"] for r in scorer.score_batch(items[::-1])][::-1]
    finally:
        scorer.release()
    assert first == again and all(first)
    assert first[0] != first[1]  # another seed, another sampled fallback
    assert "openai-whisper tiny-random sha256:" in scorer.version() and "fallback_v1" in scorer.version()
    assert scorer.protocol()["seed"] == 42 and scorer.protocol()["decoding_name"] == "fallback_v1"


def test_checkpoint_with_another_sha256_is_refused(tiny_whisper_checkpoint):
    from clonebench.evaluate.scorers.whisper_openai import OpenAIWhisperScorer

    scorer = OpenAIWhisperScorer(options(tiny_whisper_checkpoint, "0" * 64), "cpu", HashCache(None))
    with pytest.raises(AssetError, match=r"tiny-random.pt has sha256 [0-9a-f]{64}, the lock says 0{64}"):
        scorer.load()


def test_medium_is_locked_to_the_published_sha256(tmp_path):
    from clonebench.evaluate.scorers.whisper_openai import OpenAIWhisperScorer

    fake = tmp_path / "medium.pt"
    fake.write_bytes(b"not the medium checkpoint")
    scorer = OpenAIWhisperScorer({**options(fake, None), "model": "medium"}, "cpu", HashCache(None))
    assert scorer.expected_sha256() == "345ae4da62f9b3d59415adc60127b97c714f32e89e936602e85993674d08dcb1"
    with pytest.raises(AssetError, match="the lock says 345ae4da"):
        scorer.load()
