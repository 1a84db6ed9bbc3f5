"""seed_sim (Seed-TTS-eval's SIM): the verifier's loading and the scorer, with a tiny RANDOM checkpoint in the
published file's format (tests/tiny_models.py). The real wavlm_large_finetune.pth is not available offline."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch

from clonebench.core.hashing import HashCache, sha256_file
from clonebench.evaluate.assets import AssetError
from clonebench.evaluate.scorers.seedtts_sim import SeedTTSSimScorer
from clonebench.evaluate.seedtts_verifier import SeedTTSCheckpointError, load_verifier
from tests.conftest import score_item
from tests.tiny_models import write_tiny_seedtts_verifier


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return write_tiny_seedtts_verifier(tmp_path_factory.mktemp("seedtts") / "wavlm_large_finetune.pth")


@pytest.fixture(scope="module")
def clips(human_speech) -> list[Path]:
    return sorted(human_speech["librivox"])[:2] + sorted(human_speech["cards"])[:1]


def scorer(checkpoint: Path, sha256: str | None = None) -> SeedTTSSimScorer:
    options = {"verifier_checkpoint": checkpoint, "sha256": sha256 or sha256_file(checkpoint)}
    made = SeedTTSSimScorer(options, "cpu", HashCache(None))
    made.load()
    return made


def with_prompt(generated: Path, prompt: Path):
    return dataclasses.replace(score_item(generated, sample_id=f"{generated.stem}~{prompt.stem}"),
                               prompt_path=prompt, prompt_sha256=sha256_file(prompt))


def test_scores_real_speech_finite_deterministic(checkpoint, clips):
    first = scorer(checkpoint)
    items = [with_prompt(clips[0], clips[1]), with_prompt(clips[0], clips[2]), with_prompt(clips[1], clips[1])]
    records = first.score_batch(items)
    values = [r.values["seed_sim"] for r in records]
    assert all(r.ok for r in records)
    assert all(math.isfinite(v) and -1.0 <= v <= 1.0 + 1e-6 for v in values)
    assert values[2] == pytest.approx(1.0, abs=1e-6)  # a clip against itself
    assert values[0] != values[1]
    again = scorer(checkpoint).score_batch(list(reversed(items)))  # a fresh model, the other order
    assert [r.values["seed_sim"] for r in reversed(again)] == values
    assert first.version() and first.protocol()["weights_sha256"] == sha256_file(checkpoint)
    assert SeedTTSSimScorer.needs_prompt


def test_missing_prompt_is_a_record_error(checkpoint, clips):
    [record] = scorer(checkpoint).score_batch([score_item(clips[0])])
    assert not record.ok and "prompt" in record.error


def test_lock_required_and_checked(checkpoint):
    with pytest.raises(AssetError, match="evaluation.seedtts.sha256"):
        SeedTTSSimScorer({"verifier_checkpoint": checkpoint, "sha256": None}, "cpu", HashCache(None)).load()
    with pytest.raises(AssetError, match="the lock"):
        scorer(checkpoint, sha256="0" * 64)
    with pytest.raises(AssetError, match="verifier_checkpoint"):
        SeedTTSSimScorer({"verifier_checkpoint": None, "sha256": "0" * 64}, "cpu", HashCache(None)).load()


def _edited(checkpoint: Path, target: Path, edit) -> Path:
    state = torch.load(checkpoint, weights_only=True)["model"]
    edit(state)
    torch.save({"model": state}, target)
    return target


def test_missing_key_refused_naming_file_and_fix(checkpoint, tmp_path):
    key = "feature_extract.model.encoder.layers.1.fc2.weight"
    bad = _edited(checkpoint, tmp_path / "missing.pth", lambda s: s.pop(key))
    with pytest.raises(SeedTTSCheckpointError) as caught:
        load_verifier(bad)
    message = str(caught.value)
    assert str(bad) in message and key in message and "missing" in message
    assert "evaluation.seedtts.verifier_checkpoint" in message


def test_unexpected_key_refused(checkpoint, tmp_path):
    bad = _edited(checkpoint, tmp_path / "extra.pth",
                  lambda s: s.update({"feature_extract.model.final_proj.weight": torch.zeros(2, 2)}))
    with pytest.raises(SeedTTSCheckpointError, match=r"unexpected 1 key\(s\): feature_extract.model.final_proj"):
        load_verifier(bad)


def test_shape_key_missing_and_wrong_shape_refused(checkpoint, tmp_path):
    bad = _edited(checkpoint, tmp_path / "noshape.pth", lambda s: s.pop("linear.weight"))
    with pytest.raises(SeedTTSCheckpointError, match="missing key linear.weight"):
        load_verifier(bad)
    bad = _edited(checkpoint, tmp_path / "shape.pth",
                  lambda s: s.update({"feature_weight": torch.zeros(7)}))
    with pytest.raises(SeedTTSCheckpointError, match="feature_weight"):
        load_verifier(bad)


def test_unused_mask_emb_optional(checkpoint, tmp_path):
    lean = _edited(checkpoint, tmp_path / "lean.pth", lambda s: s.pop("feature_extract.model.mask_emb"))
    load_verifier(lean)


def test_not_a_checkpoint(tmp_path):
    torch.save({"state_dict": {}}, tmp_path / "x.pth")
    with pytest.raises(SeedTTSCheckpointError, match="'model' entry"):
        load_verifier(tmp_path / "x.pth")
