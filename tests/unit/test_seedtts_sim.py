"""seed_sim (Seed-TTS-eval's SIM): the verifier's loading and the scorer, with a tiny RANDOM checkpoint in the
published file's format (tests/tiny_models.py). The real wavlm_large_finetune.pth is not available offline."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch

from clonebench.core.hashing import HashCache, sha256_file
from clonebench.evaluate.protocols.assets import AssetError
from clonebench.seedtts.seedtts_sim import SeedTTSSimScorer
from clonebench.seedtts.verifier import (
    SeedTTSCheckpointError,
    build_verifier,
    embed,
    load_verifier,
    similarity,
)
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


def test_unexpected_keys_are_ignored_as_upstream_ignores_them_and_listed(checkpoint, tmp_path, caplog):
    extra = _edited(checkpoint, tmp_path / "extra.pth",
                    lambda s: s.update({"feature_extract.model.final_proj.weight": torch.zeros(2, 2)}))
    model = load_verifier(extra)
    assert model.load_report["unexpected_keys"] == ["feature_extract.model.final_proj.weight"]
    assert "feature_extract.model.final_proj.weight" in caplog.text and "ignored" in caplog.text


# -- the layout the published file was made in (issue #42 item 10) -----------------------------------------------
# Key names and shapes as the code that made wavlm_large_finetune.pth held them, written here from that code (not
# from clonebench's model): UniSpeech downstreams/speaker_verification/models/ecapa_tdnn.py at 40ac183
# (2021-12-20; ECAPA_TDNN_SMALL(feat_type="wavlm_large"): feature_extract = torch.hub s3prl "wavlm_large",
# feature_weight, instance_norm without parameters, layer1 Conv1dReluBn, layer2-4 SE_Res2Block (Conv1dReluBn1,
# Res2Conv1dReluBn with scale - 1 convs/bns, Conv1dReluBn2, SE_Connect; no shortcut when the widths agree), conv,
# pooling (AttentiveStatsPool, Conv1d linear1/linear2), bn, linear) and s3prl s3prl/upstream/wavlm at c5610b60
# (2021-11-30; UpstreamExpert.model = WavLM: mask_emb, feature_extractor in "layer_norm" mode (conv_layers.i.0 a
# bias-free Conv1d, .2.1 the Fp32LayerNorm inside TransposeLast), layer_norm, post_extract_proj,
# encoder.pos_conv.0 under nn.utils.weight_norm(dim=2), layers with q/k/v/out_proj (k biased: rescale_init off),
# relative_attention_bias on layer 0 only, grep_linear (8 gates) and grep_a, the two LayerNorms, fc1/fc2, and
# encoder.layer_norm). Tiny widths (the verifier reads every width from the shapes); random values.
KERNELS = (10, 3, 3, 3, 3, 2, 2)


def historical_layout(width=64, conv=32, layers=2, heads=4, ffn=128, pos_kernel=16, pos_groups=4, buckets=320,
                      channels=64, scale=8, se=16, cat=192, attention=16, emb=32) -> dict[str, torch.Tensor]:
    shapes: dict[str, tuple] = {}
    w = "feature_extract.model."
    shapes[w + "mask_emb"] = (width,)
    for i, kernel in enumerate(KERNELS):
        shapes[f"{w}feature_extractor.conv_layers.{i}.0.weight"] = (conv, 1 if i == 0 else conv, kernel)
        shapes[f"{w}feature_extractor.conv_layers.{i}.2.1.weight"] = shapes[f"{w}feature_extractor.conv_layers.{i}.2.1.bias"] = (conv,)
    shapes.update({w + "layer_norm.weight": (conv,), w + "layer_norm.bias": (conv,),
                   w + "post_extract_proj.weight": (width, conv), w + "post_extract_proj.bias": (width,),
                   w + "encoder.pos_conv.0.weight_g": (1, 1, pos_kernel),
                   w + "encoder.pos_conv.0.weight_v": (width, width // pos_groups, pos_kernel),
                   w + "encoder.pos_conv.0.bias": (width,)})
    for layer in range(layers):
        p = f"{w}encoder.layers.{layer}."
        for proj in ("k_proj", "v_proj", "q_proj", "out_proj"):
            shapes[p + f"self_attn.{proj}.weight"], shapes[p + f"self_attn.{proj}.bias"] = (width, width), (width,)
        if layer == 0:
            shapes[p + "self_attn.relative_attention_bias.weight"] = (buckets, heads)
        shapes.update({p + "self_attn.grep_linear.weight": (8, width // heads), p + "self_attn.grep_linear.bias": (8,),
                       p + "self_attn.grep_a": (1, heads, 1, 1), p + "fc1.weight": (ffn, width), p + "fc1.bias": (ffn,),
                       p + "fc2.weight": (width, ffn), p + "fc2.bias": (width,)})
        for norm in ("self_attn_layer_norm", "final_layer_norm"):
            shapes[p + f"{norm}.weight"] = shapes[p + f"{norm}.bias"] = (width,)
    shapes[w + "encoder.layer_norm.weight"] = shapes[w + "encoder.layer_norm.bias"] = (width,)
    shapes["feature_weight"] = (layers + 1,)

    def conv_relu_bn(prefix, n_in, n_out, kernel):
        shapes.update({prefix + "conv.weight": (n_out, n_in, kernel), prefix + "conv.bias": (n_out,)})
        for name in ("weight", "bias", "running_mean", "running_var"):
            shapes[prefix + "bn." + name] = (n_out,)
        shapes[prefix + "bn.num_batches_tracked"] = ()

    conv_relu_bn("layer1.", width, channels, 5)
    part = channels // scale
    for block in (2, 3, 4):
        b = f"layer{block}."
        conv_relu_bn(b + "Conv1dReluBn1.", channels, channels, 1)
        for i in range(scale - 1):
            r = f"{b}Res2Conv1dReluBn."
            shapes[f"{r}convs.{i}.weight"], shapes[f"{r}convs.{i}.bias"] = (part, part, 3), (part,)
            for name in ("weight", "bias", "running_mean", "running_var"):
                shapes[f"{r}bns.{i}.{name}"] = (part,)
            shapes[f"{r}bns.{i}.num_batches_tracked"] = ()
        conv_relu_bn(b + "Conv1dReluBn2.", channels, channels, 1)
        shapes.update({b + "SE_Connect.linear1.weight": (se, channels), b + "SE_Connect.linear1.bias": (se,),
                       b + "SE_Connect.linear2.weight": (channels, se), b + "SE_Connect.linear2.bias": (channels,)})
    shapes.update({"conv.weight": (cat, channels * 3, 1), "conv.bias": (cat,),
                   "pooling.linear1.weight": (attention, cat, 1), "pooling.linear1.bias": (attention,),
                   "pooling.linear2.weight": (cat, attention, 1), "pooling.linear2.bias": (cat,),
                   "linear.weight": (emb, cat * 2), "linear.bias": (emb,)})
    for name in ("weight", "bias", "running_mean", "running_var"):
        shapes["bn." + name] = (cat * 2,)
    shapes["bn.num_batches_tracked"] = ()
    generator = torch.Generator().manual_seed(1)
    state = {}
    for name, shape in shapes.items():
        if name.endswith("num_batches_tracked"):
            state[name] = torch.tensor(3, dtype=torch.long)
        elif name.endswith(("running_var", "weight_g")) or (len(shape) == 1 and name.endswith(".weight")):
            state[name] = 1.0 + 0.1 * torch.rand(shape, generator=generator)
        else:
            state[name] = 0.05 * torch.randn(shape, generator=generator)
    return state


def test_a_state_dict_in_the_published_file_s_historical_layout_is_accepted_and_fully_loaded():
    state = historical_layout()
    model = build_verifier(dict(state), "historical.pth")
    assert model.load_report["unexpected_keys"] == []
    loaded = model.state_dict()
    used = [k for k in loaded if not k.endswith("num_batches_tracked")]
    assert used and all(torch.equal(loaded[k], state[k]) for k in used)  # every weight the forward pass reads
    assert set(state) - set(loaded) == {"feature_extract.model.mask_emb"}    # read by training only
    noise = torch.Generator().manual_seed(2)
    first, second = (embed(model, torch.randn(1, 8000, generator=noise)) for _ in range(2))
    assert math.isfinite(similarity(first, second))


def test_the_historical_layout_with_another_day_s_extra_keys_is_accepted_and_lists_them(tmp_path):
    state = {**historical_layout(), "feature_extract.model.label_embs_concat": torch.zeros(4, 8),
             "projector.weight": torch.zeros(2, 2)}
    torch.save({"model": state}, tmp_path / "wavlm_large_finetune.pth")
    model = load_verifier(tmp_path / "wavlm_large_finetune.pth")
    assert model.load_report["unexpected_keys"] == ["feature_extract.model.label_embs_concat", "projector.weight"]


@pytest.mark.parametrize("key", ["feature_extract.model.encoder.layers.1.self_attn.grep_a", "layer3.SE_Connect.linear2.bias",
                                 "feature_extract.model.encoder.pos_conv.0.weight_g", "bn.running_var"])
def test_the_historical_layout_missing_a_weight_the_forward_pass_uses_is_refused(key):
    state = historical_layout()
    state.pop(key)
    with pytest.raises(SeedTTSCheckpointError) as caught:
        build_verifier(state, "historical.pth")
    assert key in str(caught.value) and "forward pass" in str(caught.value)


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
