"""Audio handed to the Python API (``clonebench.metrics``) as something other than a file: a NumPy array or a
torch tensor with its sample rate. Each becomes a WAV file in the Evaluator's own temporary folder, named by the
sha256 of its samples and rate, so the scorers read it exactly as they read a run's files (same reader, same
resampling, same cache key for the same samples); anything else is refused with an :class:`AudioInputError` that
says what is accepted. soundfile writes the file (float32, or 16-bit PCM for int16 samples): no hand-written WAV."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

from clonebench.core.atomic import atomic_write_bytes
from clonebench.core.errors import ClonebenchError

ACCEPTED = ("a path (str or os.PathLike) to an audio file, or mono samples with their rate: (array, rate), or an "
            "array / tensor with rate= (NumPy ndarray or torch.Tensor, 1-D or one channel)")


class AudioInputError(ClonebenchError, TypeError):
    """An audio argument of the Python API that cannot be scored as given (the message says what is accepted)."""


def _is_tensor(value) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "detach")


def _samples(value, role: str):
    import numpy as np

    if _is_tensor(value):
        value = value.detach().cpu().numpy()
    array = np.asarray(value)
    if array.ndim == 2 and 1 in array.shape:
        array = array.reshape(-1)
    if array.ndim != 1:
        raise AudioInputError(f"{role}: samples of shape {array.shape} are not mono audio; pass a 1-D array (or one "
                              "channel, shape (1, n) or (n, 1))")
    if array.dtype == np.int16:
        return array, "PCM_16"
    if array.dtype.kind not in "fiu" or array.dtype == np.bool_:
        raise AudioInputError(f"{role}: samples of dtype {array.dtype} are not audio; pass float samples in "
                              "[-1, 1] or int16")
    array = array.astype(np.float32)
    if not np.isfinite(array).all():
        raise AudioInputError(f"{role}: the samples hold NaN or infinite values")
    return array, "FLOAT"


def _rate(rate, role: str) -> int:
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate != int(rate) or int(rate) <= 0:
        raise AudioInputError(f"{role}: sample rate {rate!r} is not a positive whole number of Hz (e.g. 16000)")
    return int(rate)


def audio_path(value, role: str, rate, folder: Path) -> Path:
    """The file to score for the API argument ``role`` (``generated``, ``reference``, ``target``, ``prompt``):
    a path as given (FileNotFoundError when it is not a file), or array samples written under ``folder``."""
    import numpy as np
    import soundfile as sf

    if isinstance(value, (str, os.PathLike)):
        path = Path(value)
        if not path.is_file():
            raise FileNotFoundError(f"{role}: {path} is not a file")
        return path
    if isinstance(value, tuple) and len(value) == 2 and not isinstance(value[1], (tuple, list)):
        value, rate = value
    if not (isinstance(value, (np.ndarray, list)) or _is_tensor(value)):
        raise AudioInputError(f"{role}: a {type(value).__name__} is not audio; pass {ACCEPTED}")
    if rate is None:
        raise AudioInputError(f"{role}: samples without a sample rate; pass (array, rate) or rate= (Hz)")
    samples, subtype = _samples(value, role)
    rate = _rate(rate, role)
    name = hashlib.sha256(samples.tobytes() + f"|{rate}|{subtype}".encode()).hexdigest()[:32]
    path = Path(folder) / f"{role}-{name}.wav"
    if not path.is_file():
        buffer = io.BytesIO()
        sf.write(buffer, samples, rate, subtype=subtype, format="WAV")
        atomic_write_bytes(path, buffer.getvalue())
    return path
