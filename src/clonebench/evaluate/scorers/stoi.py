"""STOI: ``torch_stoi`` at 16 kHz, target recording vs generated audio, as upstream RVCBench scores it.

Upstream's rule (its fidelity evaluation): load both files (``torchaudio.load``: float32, channels first),
resample each channel to 16 kHz with ``torchaudio.functional.resample``, take the channel mean, trim both to the
shorter, right-pad both with zeros to 1 s when shorter, and score
``-NegSTOILoss(sample_rate=16000)(target, generated)`` with the library defaults (classic STOI, not extended;
``use_vad=True``; ``do_resample=True``, i.e. torch_stoi's own 10 kHz resampling). The argument order is
upstream's: the reference recording goes first (the loss's ``est_targets``), the compared audio second.
``torchaudio.load`` needs torchcodec; the same tensor is read with soundfile (``audio.load_torchaudio_like``).
"""

from __future__ import annotations

from clonebench.evaluate.audio import resample_mono_torchaudio
from clonebench.evaluate.base import Scorer, ScoreItem, ScoreRecord

RATE = 16_000


def stoi_inputs(target, generated):
    """Upstream's alignment: trim to the shorter, zero-pad on the right to 1 s; (1, T) tensors."""
    import torch.nn.functional as F

    length = min(len(target), len(generated))
    target, generated = target[:length].unsqueeze(0), generated[:length].unsqueeze(0)
    if length < RATE:
        target, generated = F.pad(target, (0, RATE - length)), F.pad(generated, (0, RATE - length))
    return target, generated


class STOIScorer(Scorer):
    name = "stoi"
    metrics = ("stoi",)
    needs_reference = True
    needs_text = False
    uses_gpu = False
    sample_rate = RATE
    # anything with a sample: upstream pads the trimmed pair to 1 s (an all-silent pair gives NaN, which
    # the validity check turns into a per-sample error)
    min_duration_s = 1 / RATE
    cpu_bound = True  # in the CPU pool it computes on one torch thread (recorded in its fingerprint)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._model = None

    def packages(self) -> tuple[str, ...]:
        return ("torch-stoi", "pystoi", "torch", "torchaudio", "numpy", "soundfile")

    def version(self) -> str:
        return ("torch_stoi NegSTOILoss(sample_rate=16000) defaults (classic, use_vad=True, internal 10 kHz "
                "resample), negated; torchaudio-style load, torchaudio.functional.resample to 16 kHz per channel, "
                "channel mean, trim to the shorter, zero-pad to 1 s; reference first; v1")

    def protocol(self) -> dict:
        return {"implementation": "torch_stoi", "sample_rate": RATE, "extended": False, "use_vad": True,
                "alignment": "trim to shorter, pad to 1 s", "order": "target, generated"}

    def load(self) -> None:
        from torch_stoi import NegSTOILoss

        self._model = NegSTOILoss(sample_rate=RATE)

    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]:
        import torch

        records = []
        for item in items:
            target, generated = stoi_inputs(resample_mono_torchaudio(item.target_path, RATE),
                                            resample_mono_torchaudio(item.generated_path, RATE))
            with torch.inference_mode():
                value = -float(self._model(target, generated).reshape(-1)[0])
            records.append(ScoreRecord(item.sample_id, {"stoi": value}))
        return records
