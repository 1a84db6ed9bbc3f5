"""DNSMOS P.835 (SIG/BAK/OVRL, plus P.808) with the ONNX models the ``speechmos`` wheel carries.

The models are sha256-verified and loaded from the verified copy (``speechmos``'s ``DNSMOS`` class with
explicit paths), at 16 kHz, non-personalised, as ``speechmos.dnsmos.run`` computes them.

Loading is the reference's: ``librosa.load(path, sr=16000)`` (what ``speechmos.dnsmos.run(path, 16000)`` and
Microsoft's DNSMOS script do: soundfile read, channel mean, soxr_hq resampling, float32). The clip is then
scored by ``score_clip`` (speechmos's 9.01 s tiling and 1 s hops), which takes the array without speechmos's
[-1, 1] range check, so float WAVs louder than full scale score as ``run(path)`` scores them.
"""

from __future__ import annotations

import numpy as np

from clonebench.evaluate.assets import ResolvedAsset, release, resolve
from clonebench.evaluate.audio import load_librosa_16k
from clonebench.evaluate.base import Scorer, ScoreItem, ScoreRecord
from clonebench.evaluate.locks import DNSMOS


def score_clip(model, audio: np.ndarray) -> dict:
    """``speechmos.dnsmos.DNSMOS.__call__(audio, 16000, False)`` minus its range check: 9.01 s windows (a shorter
    clip is tiled), 1 s hops, P.835 polynomial fit and P.808 on each window, means over windows."""
    rate, window = 16_000, int(9.01 * 16_000)
    while len(audio) < window:
        audio = np.append(audio, audio)
    scores: dict[str, list] = {"sig_mos": [], "bak_mos": [], "ovrl_mos": [], "p808_mos": []}
    for hop in range(int(np.floor(len(audio) / rate) - 9.01) + 1):
        segment = audio[int(hop * rate): int((hop + 9.01) * rate)]
        if len(segment) < window:
            continue
        mel = np.array(model.audio_melspec(audio=segment[:-160])).astype("float32")[np.newaxis, :, :]
        p808 = model.p808_onnx_sess.run(None, {"input_1": mel})[0][0][0]
        raw = model.onnx_sess.run(None, {"input_1": np.array(segment).astype("float32")[np.newaxis, :]})[0][0]
        sig, bak, ovr = model.get_polyfit_val(*raw, False)
        for key, value in zip(scores, (sig, bak, ovr, p808)):
            scores[key].append(value)
    return {key: np.mean(values) for key, values in scores.items()}


class DNSMOSScorer(Scorer):
    name = "dnsmos"
    metrics = ("dnsmos", "dnsmos_sig", "dnsmos_bak", "dnsmos_p808")
    needs_reference = False
    needs_text = False
    uses_gpu = False
    sample_rate = 16_000

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

    def load(self) -> None:
        from speechmos.dnsmos import DNSMOS as Model

        self._asset = resolve(DNSMOS, self.options.get("local_dir"), False, self.hash_cache)
        self._model = Model(str(self._asset.path("sig_bak_ovr.onnx")), str(self._asset.path("model_v8.onnx")))

    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]:
        records = []
        for item in items:
            audio = load_librosa_16k(item.generated_path)
            out = score_clip(self._model, audio)  # the inference step (one call: a faster engine may replace it)
            records.append(ScoreRecord(item.sample_id, {
                "dnsmos": float(out["ovrl_mos"]), "dnsmos_sig": float(out["sig_mos"]),
                "dnsmos_bak": float(out["bak_mos"]), "dnsmos_p808": float(out["p808_mos"])}))
        return records

    def release(self) -> None:
        super().release()
        if self._asset is not None:
            release(self._asset)
            self._asset = None
