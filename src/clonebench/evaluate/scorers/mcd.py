"""MCD: pymcd ``Calculate_MCD(MCD_mode="dtw")`` with its defaults, target recording vs generated audio.

pymcd is used as is (the historical numbers came from it): WORLD spectral envelope at 22.05 kHz,
5 ms frames, 13th-order mel-cepstrum (alpha 0.65, FFT 512), fastdtw alignment on coefficients 1..13,
log-spectral-dB constant 10/ln(10)*sqrt(2). Implementations of MCD disagree (ESPnet, VERSA, Amphion),
so the variant and its parameters are part of the version string.
"""

from __future__ import annotations

from clonebench.evaluate.base import Scorer, ScoreItem, ScoreRecord


class MCDScorer(Scorer):
    name = "mcd"
    metrics = ("mcd",)
    needs_reference = True
    needs_text = False
    uses_gpu = False
    sample_rate = 22_050

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._model = None

    def packages(self) -> tuple[str, ...]:
        return ("pymcd", "pyworld", "pysptk", "fastdtw", "librosa", "numpy")

    def version(self) -> str:
        from pymcd.mcd import Calculate_MCD

        probe = Calculate_MCD(MCD_mode="dtw")
        return (f"pymcd Calculate_MCD(MCD_mode='dtw') defaults: sr={probe.SAMPLING_RATE} "
                f"frame_period={probe.FRAME_PERIOD}ms mcep order=13 alpha=0.65 fft=512 fastdtw euclidean c1..c13; v1")

    def protocol(self) -> dict:
        return {"implementation": "pymcd", "mode": "dtw", "parameters": "library defaults"}

    def load(self) -> None:
        from pymcd.mcd import Calculate_MCD

        self._model = Calculate_MCD(MCD_mode="dtw")

    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]:
        # pymcd reads files itself (librosa/soundfile) and has no batch form: one pair at a time
        return [ScoreRecord(i.sample_id, {"mcd": float(self._model.calculate_mcd(str(i.target_path),
                                                                                 str(i.generated_path)))})
                for i in items]
