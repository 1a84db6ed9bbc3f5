"""The ECAPA-TDNN head of Seed-TTS-eval's speaker verifier (UniSpeech ``ECAPA_TDNN_SMALL``), clonebench's own code.

Parameter names follow UniSpeech's ``downstreams/speaker_verification/models/ecapa_tdnn.py`` so the published
checkpoint's tensors load as they are: ``layer1`` (Conv1dReluBn, kernel 5), ``layer2``-``layer4`` (SE-Res2
blocks: ``Conv1dReluBn1``, ``Res2Conv1dReluBn.convs/bns``, ``Conv1dReluBn2``, ``SE_Connect.linear1/2``; kernel 3,
dilation 2, 3, 4), ``conv`` (1x1 over the three blocks' outputs), ``pooling`` (attentive statistics:
``linear1``/``linear2`` 1x1 convs), ``bn`` and ``linear`` (the embedding). Every conv is conv -> ReLU -> BatchNorm
(that order). Widths come from the checkpoint's tensor shapes (:func:`head_shape`); the published model's are
channels 512, 1536 after ``conv``, 128 attention and SE channels, Res2 scale 8, a 256-wide embedding.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

DILATIONS = (2, 3, 4)  # layer2..layer4


@dataclass(frozen=True)
class HeadShape:
    feat_dim: int
    channels: int
    scale: int
    se_dim: int
    cat_out: int
    attention: int
    emb_dim: int


def head_shape(state: dict[str, torch.Tensor]) -> HeadShape:
    """The head's widths from its tensors (KeyError when one is absent)."""
    channels, feat_dim, _ = state["layer1.conv.weight"].shape
    convs = 0
    while f"layer2.Res2Conv1dReluBn.convs.{convs}.weight" in state:
        convs += 1
    return HeadShape(feat_dim=int(feat_dim), channels=int(channels), scale=convs + 1 if convs > 0 else 1,
                     se_dim=int(state["layer2.SE_Connect.linear1.weight"].shape[0]),
                     cat_out=int(state["conv.weight"].shape[0]),
                     attention=int(state["pooling.linear1.weight"].shape[0]),
                     emb_dim=int(state["linear.weight"].shape[0]))


class Conv1dReluBn(nn.Module):
    def __init__(self, n_in: int, n_out: int, kernel: int = 1, padding: int = 0, dilation: int = 1):
        super().__init__()
        self.conv = nn.Conv1d(n_in, n_out, kernel, padding=padding, dilation=dilation)
        self.bn = nn.BatchNorm1d(n_out)

    def forward(self, x):
        return self.bn(F.relu(self.conv(x)))


class Res2Conv1dReluBn(nn.Module):
    """Channels split in ``scale`` groups; group i (i < scale - 1) gets conv(group i + previous output), the
    last group passes through."""

    def __init__(self, channels: int, kernel: int, dilation: int, scale: int):
        super().__init__()
        if channels % scale:
            raise ValueError(f"{channels} channels do not split in {scale} groups")
        self.width, self.scale = channels // scale, scale
        count = scale if scale == 1 else scale - 1
        self.convs = nn.ModuleList(nn.Conv1d(self.width, self.width, kernel, padding=dilation, dilation=dilation)
                                   for _ in range(count))
        self.bns = nn.ModuleList(nn.BatchNorm1d(self.width) for _ in range(count))

    def forward(self, x):
        pieces = torch.split(x, self.width, 1)
        out, running = [], None
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns)):
            running = pieces[i] if i == 0 else running + pieces[i]
            running = bn(F.relu(conv(running)))
            out.append(running)
        if self.scale != 1:
            out.append(pieces[len(self.convs)])
        return torch.cat(out, dim=1)


class SEConnect(nn.Module):
    def __init__(self, channels: int, bottleneck: int):
        super().__init__()
        self.linear1 = nn.Linear(channels, bottleneck)
        self.linear2 = nn.Linear(bottleneck, channels)

    def forward(self, x):
        weights = torch.sigmoid(self.linear2(F.relu(self.linear1(x.mean(dim=2)))))
        return x * weights.unsqueeze(2)


class SERes2Block(nn.Module):
    def __init__(self, channels: int, dilation: int, scale: int, se_dim: int):
        super().__init__()
        self.Conv1dReluBn1 = Conv1dReluBn(channels, channels)
        self.Res2Conv1dReluBn = Res2Conv1dReluBn(channels, 3, dilation, scale)
        self.Conv1dReluBn2 = Conv1dReluBn(channels, channels)
        self.SE_Connect = SEConnect(channels, se_dim)

    def forward(self, x):
        return self.SE_Connect(self.Conv1dReluBn2(self.Res2Conv1dReluBn(self.Conv1dReluBn1(x)))) + x


class AttentiveStatsPool(nn.Module):
    def __init__(self, dim: int, attention: int):
        super().__init__()
        self.linear1 = nn.Conv1d(dim, attention, kernel_size=1)
        self.linear2 = nn.Conv1d(attention, dim, kernel_size=1)

    def forward(self, x):
        alpha = torch.softmax(self.linear2(torch.tanh(self.linear1(x))), dim=2)
        mean = torch.sum(alpha * x, dim=2)
        variance = torch.sum(alpha * (x ** 2), dim=2) - mean ** 2
        return torch.cat([mean, torch.sqrt(variance.clamp(min=1e-9))], dim=1)


class EcapaHead(nn.Module):
    """The head's modules; :class:`verifier.SeedTTSVerifier` holds them at its top level (the
    checkpoint's names carry no prefix), so this class only builds them and runs them."""

    @staticmethod
    def build(owner: nn.Module, shape: HeadShape) -> None:
        owner.layer1 = Conv1dReluBn(shape.feat_dim, shape.channels, kernel=5, padding=2)
        for i, dilation in enumerate(DILATIONS, start=2):
            setattr(owner, f"layer{i}", SERes2Block(shape.channels, dilation, shape.scale, shape.se_dim))
        owner.conv = nn.Conv1d(shape.channels * 3, shape.cat_out, kernel_size=1)
        owner.pooling = AttentiveStatsPool(shape.cat_out, shape.attention)
        owner.bn = nn.BatchNorm1d(shape.cat_out * 2)
        owner.linear = nn.Linear(shape.cat_out * 2, shape.emb_dim)

    @staticmethod
    def run(owner: nn.Module, x: torch.Tensor) -> torch.Tensor:  # (B, feat_dim, T) -> (B, emb_dim)
        out1 = owner.layer1(x)
        out2 = owner.layer2(out1)
        out3 = owner.layer3(out2)
        out4 = owner.layer4(out3)
        out = F.relu(owner.conv(torch.cat([out2, out3, out4], dim=1)))
        return owner.linear(owner.bn(owner.pooling(out)))
