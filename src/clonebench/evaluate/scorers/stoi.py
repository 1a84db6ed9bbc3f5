"""STOI: ``torch_stoi`` at 16 kHz, the generated audio scored against the target recording, exactly as the
published metric of rvcbench 2.2.1 (``STOIScorer``, version ``torch_stoi_16k_trim_to_shorter_v1``) scores it.

Its rule: load each file with soundfile as float32, take the channel mean, resample the mono signal to 16 kHz with
``torchaudio.functional.resample`` (``audio.mono_then_resample``), trim both to the shorter, right-pad both with
zeros to 1 s when shorter, and score ``-NegSTOILoss(sample_rate=16000)(generated, target)`` with the library
defaults (classic STOI, not extended; ``use_vad=True``; torch_stoi's own 10 kHz resampling). The order matters:
torch_stoi's ``forward(est_targets, targets)`` takes the estimate first and computes the voice-activity frames and
the clipping from the clean signal, so the GENERATED clip is the estimate and the target recording the clean
reference. (Protocol v1 of this scorer had them the other way round, the order of upstream's protection-fidelity
code, and resampled each channel before the downmix: up to 0.11 apart on real speech. v2 is a new fingerprint, so
no v1 record is ever reused.)
"""

from __future__ import annotations

from clonebench.evaluate.protocols.audio import mono_then_resample
from clonebench.evaluate.protocols.base import ScoreItem, Scorer, ScoreRecord

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
                "resample), negated; soundfile float32, channel mean, then torchaudio.functional.resample to "
                "16 kHz; trim to the shorter, zero-pad to 1 s; generated = estimate, target = clean "
                "(rvcbench 2.2.1 torch_stoi_16k_trim_to_shorter_v1); v2")

    def protocol(self) -> dict:
        return {"implementation": "torch_stoi", "sample_rate": RATE, "extended": False, "use_vad": True,
                "loading": "soundfile float32, channel mean, torchaudio resample",
                "alignment": "trim to shorter, pad to 1 s", "order": "estimate=generated, clean=target",
                "upstream": "rvcbench 2.2.1 torch_stoi_16k_trim_to_shorter_v1"}

    def load(self) -> None:
        from torch_stoi import NegSTOILoss

        self._model = NegSTOILoss(sample_rate=RATE)

    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]:
        import torch

        records = []
        for item in items:
            target, generated = stoi_inputs(mono_then_resample(item.target_path, RATE),
                                            mono_then_resample(item.generated_path, RATE))
            with torch.inference_mode():
                value = -float(self._model(generated, target).reshape(-1)[0])
            records.append(ScoreRecord(item.sample_id, {"stoi": value}))
        return records
