"""Speech detection: Silero VAD (v6, the ONNX model inside the ``silero-vad`` 6.2.3 wheel, sha256-locked).

Why Silero and not WebRTC VAD: WebRTC's GMM calls most broadband noise speech (its aggressiveness only trades
that against missed speech), so white noise or a hiss would pass as a spoken clip; Silero's network was trained
to reject noise and music, ships its weights in the wheel (nothing fetched at run time) and runs on a CPU at
about 1 ms per 32 ms window. Its defaults are used (threshold 0.5, speech >= 250 ms, silences >= 100 ms, 30 ms
padding), on 16 kHz mono audio; the model's state is reset per clip, so a clip's result is a function of the clip.

The ONNX model runs in an onnxruntime session of one thread (the package's ``OnnxWrapper``), not the JIT model on
torch: its result does not follow torch's thread count, and it stays fast beside multi-threaded scorers (the JIT
model's thousands of tiny ops per clip took ~80x longer on two busy threads than on one, measured). Importing the
``silero_vad`` package sets torch's thread count to 1 for the whole process (its ``model.py``); the count is put
back at once, since other scorers' numbers and speed depend on it.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clonebench.core.errors import ClonebenchError

RATE = 16_000
PACKAGE_VERSION = "6.2.3"
MODEL_FILE = "silero_vad.onnx"
MODEL_SHA256 = "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3"
OPTIONS = {"threshold": 0.5, "min_speech_duration_ms": 250, "min_silence_duration_ms": 100, "speech_pad_ms": 30}


@dataclass(frozen=True)
class Speech:
    """Where the speech of a clip is: its detected segments (seconds) within a clip of ``duration_s``."""

    duration_s: float
    segments: tuple[tuple[float, float], ...]

    @property
    def speech_s(self) -> float:
        return float(sum(end - start for start, end in self.segments))

    @property
    def ratio(self) -> float:
        return self.speech_s / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def lead_s(self) -> float:
        return self.segments[0][0] if self.segments else self.duration_s

    @property
    def trail_s(self) -> float:
        return self.duration_s - self.segments[-1][1] if self.segments else self.duration_s

    @property
    def span_s(self) -> float:
        """From the first detected speech to the end of the last (pauses inside count)."""
        return self.segments[-1][1] - self.segments[0][0] if self.segments else 0.0


def model_path() -> Path:
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or spec.origin is None:
        raise ClonebenchError("the failure-mode scorer needs the silero-vad package: pip install "
                              f"silero-vad=={PACKAGE_VERSION} (bash scripts/setup.sh installs it)")
    return Path(spec.origin).parent / "data" / MODEL_FILE


class SileroVad:
    def __init__(self, hash_cache=None):
        import torch

        path = model_path()
        digest = hash_cache.sha256(path) if hash_cache is not None else _sha256(path)
        if digest != MODEL_SHA256:
            raise ClonebenchError(f"{path}: sha256 {digest}, expected {MODEL_SHA256} (silero-vad {PACKAGE_VERSION});"
                                  f" reinstall it: pip install --force-reinstall silero-vad=={PACKAGE_VERSION}")
        threads = torch.get_num_threads()
        try:
            from silero_vad import utils_vad  # noqa: F401  (its package __init__ sets torch to one thread)
        finally:
            torch.set_num_threads(threads)
        self._timestamps = utils_vad.get_speech_timestamps
        self._model = utils_vad.OnnxWrapper(str(path), force_onnx_cpu=True)  # one intra-op thread
        self.path, self.sha256 = path, digest

    def speech(self, mono_16k: np.ndarray) -> Speech:
        import torch

        wave = torch.from_numpy(np.ascontiguousarray(mono_16k, dtype=np.float32))
        self._model.reset_states()
        with torch.inference_mode():
            found = self._timestamps(wave, self._model, sampling_rate=RATE, **OPTIONS)
        segments = tuple((s["start"] / RATE, s["end"] / RATE) for s in found)
        return Speech(len(mono_16k) / RATE, segments)


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def protocol() -> dict:
    return {"vad": f"silero-vad {PACKAGE_VERSION} {MODEL_FILE} (onnxruntime, 1 thread)", "sha256": MODEL_SHA256,
            "rate": RATE, **OPTIONS}
