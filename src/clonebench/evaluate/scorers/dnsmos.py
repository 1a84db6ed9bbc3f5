"""DNSMOS P.835 (SIG/BAK/OVRL, plus P.808) with the ONNX models the ``speechmos`` wheel carries.

The models are sha256-verified and loaded from the verified copy, at 16 kHz, non-personalised, as
``speechmos.dnsmos.run`` computes them.

Loading is the reference's: ``librosa.load(path, sr=16000)`` (what ``speechmos.dnsmos.run(path, 16000)`` and
Microsoft's DNSMOS script do: soundfile read, channel mean, soxr_hq resampling, float32). The clip is then
scored by ``dnsmos_batched`` (speechmos's 9.01 s tiling and 1 s hops, P.835 polynomial fit and P.808 on each
window, means over windows; repeated windows computed once, P.808 features batched, calls spread over spare
cores; tested equal to ``speechmos.dnsmos.run`` within 1e-6), without speechmos's [-1, 1] range check, so
float WAVs louder than full scale score as ``run(path)`` scores them.
"""

from __future__ import annotations

from pathlib import Path

from clonebench.evaluate.protocols.assets import ResolvedAsset, resolve
from clonebench.evaluate.protocols.audio import load_librosa_16k
from clonebench.evaluate.protocols.base import ScoreItem, Scorer, ScoreRecord
from clonebench.evaluate.protocols.locks import DNSMOS


class DNSMOSScorer(Scorer):
    name = "dnsmos"
    metrics = ("dnsmos", "dnsmos_sig", "dnsmos_bak", "dnsmos_p808")
    needs_reference = False
    needs_text = False
    uses_gpu = False
    sample_rate = 16_000
    runs_beside_others = True  # ONNX sessions with one intra-op thread (dnsmos_batched)
    cpu_bound = True
    threads_change_numbers = False  # the thread count is fixed (one per session), never the host's

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._model = None
        self._asset: ResolvedAsset | None = None

    def packages(self) -> tuple[str, ...]:
        return ("speechmos", "onnxruntime", "librosa", "soxr", "numpy", "soundfile")

    def version(self) -> str:
        return f"DNSMOS P.835 sig_bak_ovr.onnx sha256:{DNSMOS.lock['sig_bak_ovr.onnx'][:16]} + P.808, 16 kHz, " \
               "non-personalised, speechmos polynomial fit; audio: librosa.load(path, sr=16000, res_type=soxr_hq); v2"

    def assets(self) -> list[dict]:
        return [{**DNSMOS.describe(), "source": self._asset.source if self._asset else None}]

    def protocol(self) -> dict:
        return {"model": "DNSMOS P.835", "sig_bak_ovr_sha256": DNSMOS.lock["sig_bak_ovr.onnx"], "personalized": False,
                "resampler": "librosa.load sr=16000 soxr_hq"}

    @classmethod
    def source_files(cls):
        from clonebench.evaluate.scorers import dnsmos_batched

        return [*super().source_files(), Path(dnsmos_batched.__file__)]  # the computation lives there

    def load(self) -> None:
        from clonebench.evaluate.scorers.dnsmos_batched import BatchedDNSMOS

        self._asset = resolve(DNSMOS, self.options.get("local_dir"), False, self.hash_cache)
        self._model = BatchedDNSMOS(self._asset.path("sig_bak_ovr.onnx"), self._asset.path("model_v8.onnx"),
                                    threads=1)

    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]:
        records = []
        for item in items:
            audio = load_librosa_16k(item.generated_path)
            out = self._model(audio)  # speechmos's DNSMOS.__call__(audio, 16000, False), windows batched
            records.append(ScoreRecord(item.sample_id, {
                "dnsmos": float(out["ovrl_mos"]), "dnsmos_sig": float(out["sig_mos"]),
                "dnsmos_bak": float(out["bak_mos"]), "dnsmos_p808": float(out["p808_mos"])}))
        return records
