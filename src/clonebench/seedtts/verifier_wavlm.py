"""WavLM, the front end of Seed-TTS-eval's speaker verifier (UniSpeech ``wavlm_large_finetune.pth``).

clonebench's own implementation of the WavLM architecture (Chen et al. 2022) as the benchmark runs it: the
s3prl ``wavlm_large`` upstream that UniSpeech's ``ECAPA_TDNN(feat_type="wavlm_large")`` loads through
``torch.hub``. Module and parameter names follow the UniSpeech/fairseq layout, so the published checkpoint's
``feature_extract.model.*`` tensors load without renaming (``verifier.py`` strips the prefix):

- ``feature_extractor.conv_layers.<i>.0`` a bias-free Conv1d, ``.2.1`` a LayerNorm over channels ("layer_norm"
  extractor mode, WavLM-Large's), then GELU;
- ``layer_norm`` over the last conv channels, ``post_extract_proj`` to the model width (absent when equal);
- ``encoder.pos_conv.0`` a grouped Conv1d with weight normalisation over dim 2 (``weight_g``, ``weight_v``),
  then one frame removed when the kernel is even (SamePad) and GELU, added to its input;
- ``encoder.layers.<i>``: pre-LayerNorm blocks (``self_attn_layer_norm``, ``self_attn.{q,k,v,out}_proj``,
  ``final_layer_norm``, ``fc1``, ``fc2``), gated relative position bias (``self_attn.grep_linear``,
  ``self_attn.grep_a``) whose bucket table (``self_attn.relative_attention_bias``) only layer 0 holds;
- ``encoder.layer_norm`` on the last layer's output.

``hidden_states`` returns what s3prl's hooks collect: the input of every encoder layer (B, T, C) and the
encoder's output after its final LayerNorm, i.e. ``layers + 1`` tensors. Inference only (no masking, dropout
or layer drop). Dimensions come from the checkpoint's tensor shapes (:func:`shape_from_state`); the settings
that no tensor shape carries are WavLM-Large's (conv strides, 800 max bucket distance, pre-LayerNorm,
waveform normalisation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

# WavLM-Large's conv stack: (kernel, stride) per layer; 320 samples per frame at 16 kHz
CONV_GEOMETRY = ((10, 5), (3, 2), (3, 2), (3, 2), (3, 2), (2, 2), (2, 2))
MAX_DISTANCE = 800  # WavLM-Large's max_distance of the relative position buckets (no tensor carries it)


@dataclass(frozen=True)
class WavLMShape:
    conv_channels: tuple[int, ...]
    conv_bias: bool
    embed_dim: int
    ffn_dim: int
    heads: int
    layers: int
    pos_conv_kernel: int
    pos_conv_groups: int
    num_buckets: int
    max_distance: int = MAX_DISTANCE
    normalize: bool = True  # WavLM-Large: the waveform is layer-normalised (zero mean, unit variance) first


def shape_from_state(state: dict[str, torch.Tensor]) -> WavLMShape:
    """The architecture a WavLM state dict (fairseq names, no prefix) describes; KeyError when a tensor the
    shapes are read from is absent, ValueError when the layout is not WavLM-Large's."""
    channels, bias = [], []
    for i, (kernel, _) in enumerate(CONV_GEOMETRY):
        weight = state[f"feature_extractor.conv_layers.{i}.0.weight"]
        if weight.shape[-1] != kernel:
            raise ValueError(f"conv layer {i} has kernel {weight.shape[-1]}, WavLM's is {kernel}")
        channels.append(int(weight.shape[0]))
        bias.append(f"feature_extractor.conv_layers.{i}.0.bias" in state)
    if f"feature_extractor.conv_layers.{len(CONV_GEOMETRY)}.0.weight" in state:
        raise ValueError(f"more than {len(CONV_GEOMETRY)} conv layers (WavLM has {len(CONV_GEOMETRY)})")
    if "feature_extractor.conv_layers.0.2.1.weight" not in state:
        raise ValueError("the conv layers have no LayerNorm (feature_extractor.conv_layers.0.2.1): not the "
                         "'layer_norm' extractor mode of WavLM-Large")
    layers = 0
    while f"encoder.layers.{layers}.fc1.weight" in state:
        layers += 1
    if layers == 0:
        raise KeyError("encoder.layers.0.fc1.weight")
    buckets, heads = state["encoder.layers.0.self_attn.relative_attention_bias.weight"].shape
    pos = state["encoder.pos_conv.0.weight_v"]
    embed = int(state["encoder.layer_norm.weight"].shape[0])
    return WavLMShape(conv_channels=tuple(channels), conv_bias=all(bias), embed_dim=embed,
                      ffn_dim=int(state["encoder.layers.0.fc1.weight"].shape[0]), heads=int(heads), layers=layers,
                      pos_conv_kernel=int(pos.shape[-1]), pos_conv_groups=embed // int(pos.shape[1]),
                      num_buckets=int(buckets))


class _ChannelLayerNorm(nn.Module):
    """LayerNorm over the channels of a (B, C, T) tensor, as fairseq's TransposeLast/Fp32LayerNorm/TransposeLast
    (child ``1`` holds the weights, so the names read ``.2.1.weight``)."""

    def __init__(self, channels: int):
        super().__init__()
        self.add_module("1", nn.LayerNorm(channels))

    def forward(self, x):
        norm = getattr(self, "1")
        return F.layer_norm(x.transpose(-2, -1).float(), norm.normalized_shape, norm.weight.float(),
                            norm.bias.float(), norm.eps).type_as(x).transpose(-2, -1)


class _ConvBlock(nn.Module):
    def __init__(self, n_in: int, n_out: int, kernel: int, stride: int, bias: bool):
        super().__init__()
        self.add_module("0", nn.Conv1d(n_in, n_out, kernel, stride=stride, bias=bias))
        self.add_module("2", _ChannelLayerNorm(n_out))

    def forward(self, x):
        return F.gelu(getattr(self, "2")(getattr(self, "0")(x)))


class ConvFeatureExtractor(nn.Module):
    def __init__(self, shape: WavLMShape):
        super().__init__()
        blocks, n_in = [], 1
        for n_out, (kernel, stride) in zip(shape.conv_channels, CONV_GEOMETRY):
            blocks.append(_ConvBlock(n_in, n_out, kernel, stride, shape.conv_bias))
            n_in = n_out
        self.conv_layers = nn.ModuleList(blocks)

    def forward(self, wav):  # (B, T) -> (B, C, frames)
        x = wav.unsqueeze(1)
        for block in self.conv_layers:
            x = block(x)
        return x


class _PosConv(nn.Module):
    """Conv1d with weight normalisation over dim 2 (``weight_g`` x ``weight_v`` / its norm), as
    ``torch.nn.utils.weight_norm(conv, dim=2)`` computes it."""

    def __init__(self, dim: int, kernel: int, groups: int):
        super().__init__()
        self.weight_g = nn.Parameter(torch.ones(1, 1, kernel))
        self.weight_v = nn.Parameter(torch.zeros(dim, dim // groups, kernel))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.padding, self.groups = kernel // 2, groups

    def forward(self, x):
        weight = torch._weight_norm(self.weight_v, self.weight_g, 2)
        return F.conv1d(x, weight, self.bias, padding=self.padding, groups=self.groups)


class _PosEmbedding(nn.Module):
    def __init__(self, shape: WavLMShape):
        super().__init__()
        self.add_module("0", _PosConv(shape.embed_dim, shape.pos_conv_kernel, shape.pos_conv_groups))
        self.trim = 1 if shape.pos_conv_kernel % 2 == 0 else 0

    def forward(self, x):  # (B, C, T)
        x = getattr(self, "0")(x)
        if self.trim:
            x = x[:, :, :-self.trim]
        return F.gelu(x)


def relative_buckets(length: int, num_buckets: int, max_distance: int) -> torch.Tensor:
    """(T, T) bucket index of key position minus query position: half the buckets per direction, exact below a
    quarter of them, then logarithmic up to ``max_distance``."""
    relative = torch.arange(length, dtype=torch.long)[None, :] - torch.arange(length, dtype=torch.long)[:, None]
    half = num_buckets // 2
    buckets = (relative > 0).long() * half
    distance = relative.abs()
    exact = half // 2
    far = exact + (torch.log(distance.float() / exact) / math.log(max_distance / exact) * (half - exact)).long()
    far = torch.minimum(far, torch.full_like(far, half - 1))
    return buckets + torch.where(distance < exact, distance, far)


class SelfAttention(nn.Module):
    def __init__(self, shape: WavLMShape, has_bias_table: bool):
        super().__init__()
        dim, self.heads = shape.embed_dim, shape.heads
        self.q_proj, self.k_proj = nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.v_proj, self.out_proj = nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.grep_linear = nn.Linear(dim // shape.heads, 8)
        self.grep_a = nn.Parameter(torch.ones(1, shape.heads, 1, 1))
        if has_bias_table:
            self.relative_attention_bias = nn.Embedding(shape.num_buckets, shape.heads)
        self.num_buckets, self.max_distance = shape.num_buckets, shape.max_distance

    def position_bias(self, length: int, batch: int) -> torch.Tensor:
        table = self.relative_attention_bias.weight
        buckets = relative_buckets(length, self.num_buckets, self.max_distance).to(table.device)
        values = F.embedding(buckets, table).permute(2, 0, 1)  # (H, T, T)
        return values.unsqueeze(0).repeat(batch, 1, 1, 1).view(batch * self.heads, length, length)

    def forward(self, x, padding_mask, bias):  # x: (T, B, C)
        length, batch, dim = x.shape
        if bias is None:
            bias = self.position_bias(length, batch)
        # the gate reads the (normalised) layer input split into heads, before any projection
        per_head = x.transpose(0, 1).reshape(batch, length, self.heads, -1).permute(0, 2, 1, 3)
        gates = torch.sigmoid(self.grep_linear(per_head).view(batch, self.heads, length, 2, 4).sum(-1))
        gate_a, gate_b = gates.chunk(2, dim=-1)
        gate = gate_a * (gate_b * self.grep_a - 1.0) + 2.0
        mask = (gate.view(batch * self.heads, -1, 1) * bias).view(-1, length, length)
        # the key padding mask as the float mask torch would make of it (0 kept, -inf padded): same numbers,
        # without torch's warning about mixing a bool padding mask with a float attention mask
        padding_mask = torch.zeros(padding_mask.shape, dtype=mask.dtype, device=mask.device).masked_fill(
            padding_mask, float("-inf"))
        out, _ = F.multi_head_attention_forward(
            x, x, x, dim, self.heads, torch.empty([0]),
            torch.cat((self.q_proj.bias, self.k_proj.bias, self.v_proj.bias)), None, None, False, 0.0,
            self.out_proj.weight, self.out_proj.bias, False, padding_mask, False, mask,
            use_separate_proj_weight=True, q_proj_weight=self.q_proj.weight, k_proj_weight=self.k_proj.weight,
            v_proj_weight=self.v_proj.weight)
        return out, bias


class EncoderLayer(nn.Module):
    def __init__(self, shape: WavLMShape, has_bias_table: bool):
        super().__init__()
        self.self_attn = SelfAttention(shape, has_bias_table)
        self.self_attn_layer_norm = nn.LayerNorm(shape.embed_dim)
        self.fc1 = nn.Linear(shape.embed_dim, shape.ffn_dim)
        self.fc2 = nn.Linear(shape.ffn_dim, shape.embed_dim)
        self.final_layer_norm = nn.LayerNorm(shape.embed_dim)

    def forward(self, x, padding_mask, bias):
        attended, bias = self.self_attn(self.self_attn_layer_norm(x), padding_mask, bias)
        x = x + attended
        hidden = F.gelu(self.fc1(self.final_layer_norm(x)).float()).type_as(x)
        return x + self.fc2(hidden), bias


class Encoder(nn.Module):
    def __init__(self, shape: WavLMShape):
        super().__init__()
        self.pos_conv = _PosEmbedding(shape)
        self.layers = nn.ModuleList(EncoderLayer(shape, i == 0) for i in range(shape.layers))
        self.layer_norm = nn.LayerNorm(shape.embed_dim)

    def forward(self, x, padding_mask) -> list[torch.Tensor]:
        x = x.masked_fill(padding_mask.unsqueeze(-1), 0.0)
        x = x + self.pos_conv(x.transpose(1, 2)).transpose(1, 2)
        x = x.transpose(0, 1)  # (T, B, C)
        states, bias = [], None
        for layer in self.layers:
            states.append(x.transpose(0, 1))  # s3prl's hook: each layer's input
            x, bias = layer(x, padding_mask, bias)
        states.append(self.layer_norm(x.transpose(0, 1)))  # s3prl's hook: the encoder's output
        return states


class WavLM(nn.Module):
    def __init__(self, shape: WavLMShape):
        super().__init__()
        self.shape = shape
        self.feature_extractor = ConvFeatureExtractor(shape)
        self.layer_norm = nn.LayerNorm(shape.conv_channels[-1])
        if shape.conv_channels[-1] != shape.embed_dim:
            self.post_extract_proj = nn.Linear(shape.conv_channels[-1], shape.embed_dim)
        else:
            self.post_extract_proj = None
        self.encoder = Encoder(shape)

    def hidden_states(self, wav: torch.Tensor) -> list[torch.Tensor]:
        """The ``layers + 1`` hidden states (1, frames, C) of one 16 kHz clip (a 1-D tensor), as s3prl's
        ``wavlm_large`` upstream returns them for ``[wav]``."""
        if self.shape.normalize:
            wav = F.layer_norm(wav, wav.shape)
        features = self.layer_norm(self.feature_extractor(wav.unsqueeze(0)).transpose(1, 2))
        if self.post_extract_proj is not None:
            features = self.post_extract_proj(features)
        padding_mask = torch.zeros(features.shape[:2], dtype=torch.bool, device=features.device)
        return self.encoder(features, padding_mask)
