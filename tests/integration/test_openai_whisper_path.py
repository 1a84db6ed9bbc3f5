"""The openai-whisper backend (the reproduction default, ``medium``) on a tiny RANDOMLY INITIALISED checkpoint.

openai-whisper's real weights cannot be fetched offline here, so this checks the code path, not
recognition quality: a checkpoint in openai-whisper's own format (dims + state dict) is sha256-locked,
loaded through ``whisper.load_model``, batch-decoded, and must give what ``model.transcribe`` gives
clip by clip; a checkpoint whose sha256 differs from the lock is refused.
"""

from __future__ import annotations

import pytest

from clonebench.evaluate.assets import AssetError
from clonebench.hashing import HashCache, sha256_file

from tests.conftest import score_item


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    import torch
    from whisper.model import ModelDimensions, Whisper

    dims = ModelDimensions(n_mels=80, n_audio_ctx=1500, n_audio_state=64, n_audio_head=2, n_audio_layer=1,
                           n_vocab=51865, n_text_ctx=448, n_text_state=64, n_text_head=2, n_text_layer=1)
    torch.manual_seed(0)
    model = Whisper(dims)
    with torch.no_grad():  # zero the special tokens' (tied) output rows so that the random model emits text
        model.decoder.token_embedding.weight[50257:] = 0.0
    path = tmp_path_factory.mktemp("whisper") / "tiny-random.pt"
    torch.save({"dims": dims.__dict__, "model_state_dict": model.state_dict()}, path)
    return path


def options(path, sha):
    return {"backend": "openai_whisper", "model": "tiny-random", "local_path": path, "sha256": sha,
            "normalisation": "ascii_punctuation_removed_v2", "compute_type": "auto", "allow_hub": False}


def test_batched_decode_equals_transcribe(tiny_checkpoint, human_speech):
    from clonebench.evaluate.scorers.whisper_openai import OpenAIWhisperScorer

    scorer = OpenAIWhisperScorer(options(tiny_checkpoint, sha256_file(tiny_checkpoint)), "cpu", HashCache(None))
    scorer.load()
    try:
        items = [score_item(p, text=t) for p, t in list(human_speech["librivox"].items())[:3]]
        batched = scorer.score_batch(items)
        expected = []
        for item in items:
            result = scorer._model.transcribe(str(item.generated_path), language="en", task="transcribe",
                                              temperature=0.0, condition_on_previous_text=False,
                                              without_timestamps=True, fp16=False)
            expected.append(result["text"].strip())
    finally:
        scorer.release()
    assert [r.values["hypothesis"] for r in batched] == expected
    assert all(expected)  # real (if meaningless) text came out, so the comparison has content
    assert all(0.0 <= r.values["wer"] for r in batched)  # a random model's text: only the mechanics are checked
    assert "openai-whisper tiny-random sha256:" in scorer.version()


def test_checkpoint_with_another_sha256_is_refused(tiny_checkpoint):
    from clonebench.evaluate.scorers.whisper_openai import OpenAIWhisperScorer

    scorer = OpenAIWhisperScorer(options(tiny_checkpoint, "0" * 64), "cpu", HashCache(None))
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
