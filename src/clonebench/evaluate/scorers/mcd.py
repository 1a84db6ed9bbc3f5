"""MCD: pymcd ``Calculate_MCD(MCD_mode="dtw")`` with its defaults, target recording vs generated audio.

pymcd is the reference protocol (the historical numbers came from it): WORLD spectral envelope at
22.05 kHz, 5 ms frames, 13th-order mel-cepstrum (alpha 0.65, FFT 512), fastdtw alignment on coefficients
1..13, log-spectral-dB constant 10/ln(10)*sqrt(2). Implementations of MCD disagree (ESPnet, VERSA,
Amphion), so the variant and its parameters are part of the version string.

The numbers come from ``mcd_fast``: the same computation without WORLD's unused aperiodicity, pysptk's
per-frame Python wrapper and fastdtw's interpreted loop, bitwise equal to pymcd (tested against it on
real speech at several rates and lengths). A target's features are computed once per scorer (a target
shared by several generated clips is analysed once), keyed by its sha256.
"""

from __future__ import annotations

from pathlib import Path

from clonebench.evaluate.protocols.base import ScoreItem, Scorer, ScoreRecord


class MCDScorer(Scorer):
    name = "mcd"
    metrics = ("mcd",)
    needs_reference = True
    needs_text = False
    uses_gpu = False
    sample_rate = 22_050
    runs_beside_others = True  # WORLD, SPTK and the DTW run on one thread
    cpu_bound = True
    threads_change_numbers = False  # fixed single-threaded kernels; map_items spreads whole items, not sums

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._model = None
        self._targets: dict[str, object] = {}

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

    def precision(self) -> str:
        return "float64"  # WORLD, SPTK and the DTW compute in doubles

    @classmethod
    def source_files(cls):
        from clonebench.evaluate.scorers import mcd_fast

        return [*super().source_files(), Path(mcd_fast.__file__)]  # the computation lives there

    def load(self) -> None:
        from clonebench.evaluate.scorers import mcd_fast

        mcd_fast.warm_up()
        self._model = mcd_fast

    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]:
        # pymcd's loader (librosa at 22.05 kHz) per file, features once per file (sha256), files and pairs
        # spread over the spare cores (WORLD, SPTK and the DTW kernels release the GIL; each is independent)
        from clonebench.evaluate.execution.overlap import map_items

        def key(path, sha: str) -> str:
            return sha or f"path:{path}"

        features = {k: self._targets[k] for i in items if (k := key(i.target_path, i.target_sha256)) in self._targets}
        files = {}
        for item in items:
            for path, sha in ((item.target_path, item.target_sha256), (item.generated_path, item.generated_sha256)):
                if key(path, sha) not in features:
                    files.setdefault(key(path, sha), path)
        for k, mcep in zip(files, map_items(lambda p: self._model.mcep(self._model.load(p)), list(files.values()))):
            features[k] = mcep
        for item in items:  # targets are shared by many generated clips: kept for the scorer's life
            k = key(item.target_path, item.target_sha256)
            self._targets[k] = features[k]

        def pair(item: ScoreItem) -> float:
            return float(self._model.mcd_from_mceps(features[key(item.target_path, item.target_sha256)],
                                                    features[key(item.generated_path, item.generated_sha256)]))

        return [ScoreRecord(i.sample_id, {"mcd": v}) for i, v in zip(items, map_items(pair, items))]

    def release(self) -> None:
        self._targets = {}
        super().release()
