"""MCD: pymcd ``Calculate_MCD(MCD_mode="dtw")`` with its defaults, target recording vs generated audio.

pymcd is the reference protocol (the historical numbers came from it): WORLD spectral envelope at
22.05 kHz, 5 ms frames, 13th-order mel-cepstrum (alpha 0.65, FFT 512), fastdtw alignment on coefficients
1..13, log-spectral-dB constant 10/ln(10)*sqrt(2). Implementations of MCD disagree (ESPnet, VERSA,
Amphion), so the variant and its parameters are part of the version string.

The numbers come from ``mcd_fast``: the same computation without WORLD's unused aperiodicity, pysptk's
per-frame Python wrapper and fastdtw's interpreted loop, bitwise equal to pymcd (tested against it on
real speech at several rates and lengths). A recording's features are computed once per scorer
(a target shared by several generated clips is analysed once), keyed by its sha256.
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
    runs_beside_others = True  # WORLD, SPTK and the DTW run on one thread

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._model = None
        self._features: dict[str, object] = {}

    def packages(self) -> tuple[str, ...]:
        return ("pymcd", "pyworld", "pysptk", "fastdtw", "librosa", "numba", "scipy", "numpy")

    def version(self) -> str:
        from pymcd.mcd import Calculate_MCD

        probe = Calculate_MCD(MCD_mode="dtw")
        return (f"pymcd Calculate_MCD(MCD_mode='dtw') defaults: sr={probe.SAMPLING_RATE} "
                f"frame_period={probe.FRAME_PERIOD}ms mcep order=13 alpha=0.65 fft=512 fastdtw euclidean c1..c13; "
                "computed by clonebench mcd_fast, bitwise equal to pymcd; v1")

    def protocol(self) -> dict:
        return {"implementation": "pymcd", "mode": "dtw", "parameters": "library defaults"}

    def load(self) -> None:
        from clonebench.evaluate.scorers import mcd_fast

        mcd_fast.warm_up()
        self._model = mcd_fast

    def _mcep(self, path, sha256: str):
        if not sha256:
            return self._model.mcep(self._model.load(path))
        if sha256 not in self._features:
            self._features[sha256] = self._model.mcep(self._model.load(path))
        return self._features[sha256]

    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]:
        # pymcd's loader (librosa at 22.05 kHz) per file; no batch form: one pair at a time
        return [ScoreRecord(i.sample_id, {"mcd": float(self._model.mcd_from_mceps(
                    self._mcep(i.target_path, i.target_sha256), self._mcep(i.generated_path, i.generated_sha256)))})
                for i in items]

    def release(self) -> None:
        self._features = {}
        super().release()
