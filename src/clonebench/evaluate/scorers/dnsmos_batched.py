"""speechmos's DNSMOS computation (``speechmos.dnsmos.DNSMOS.__call__``), with a clip's windows batched,
computed once when repeated, and spread over spare cores.

speechmos repeats a clip shorter than 9.01 s until it is long enough, cuts 9.01 s windows every second
and runs both models once per window (a 2 s clip: the 9 s model 7 times). Here: windows that repetition
made identical are computed once (a 2 s clip has 2 distinct windows of 7); the P.808 model gets several
windows per call (``[N, 900, 120]``), their log-mel features from one batched STFT, each normalised by
its own maximum as speechmos does; the 9 s model gets ``WINDOWS_PER_CALL`` windows per call (see there),
the calls spread over the cores that are free (``overlap.map_items``). Same windows (speechmos's float
arithmetic for their bounds), same polynomial fit, same mean: equal to speechmos within float noise
(tested <= 1e-6). Sessions have an explicit thread count (one) instead of ONNX Runtime's default.
"""

from __future__ import annotations

import os

import numpy as np

SR = 16000
INPUT_LENGTH = 9.01
# Measured on the 2-core CPU: all of a clip's windows in one call of the 9 s model was no faster than one
# window per call (the model's compute dwarfs a call's overhead) and costs ~150 MB of activations per
# window (1.1 GB for 7 windows), so the model gets one window per call. The P.808 model (~50 MB per window)
# gets up to P808_WINDOWS_PER_CALL. Fixed sizes: the numbers never depend on the schedule.
WINDOWS_PER_CALL = 1
P808_WINDOWS_PER_CALL = 4
# speechmos's non-personalised P.835 polynomial fit (np.poly1d coefficients, highest power first)
P_OVR = np.poly1d([-0.06766283, 1.11546468, 0.04602535])
P_SIG = np.poly1d([-0.08397278, 1.22083953, 0.0052439])
P_BAK = np.poly1d([-0.13166888, 1.60915514, -0.39604546])


def default_threads() -> int:
    """ONNX Runtime intra-op threads: every core this process may use (its default counts physical cores)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


class BatchedDNSMOS:
    """The two DNSMOS ONNX sessions, with the thread count set here rather than left to ONNX Runtime."""

    def __init__(self, primary_model_path, p808_model_path, threads: int | None = None):
        import onnxruntime as ort

        self.threads = threads or default_threads()
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        providers = ["CPUExecutionProvider"]
        self.primary_model_path = str(primary_model_path)
        self.onnx_sess = ort.InferenceSession(str(primary_model_path), options, providers=providers)
        self.p808_onnx_sess = ort.InferenceSession(str(p808_model_path), options, providers=providers)

    def __call__(self, audio: np.ndarray) -> dict[str, float]:
        return score(self, audio)


def window_plan(audio: np.ndarray, fs: int = SR) -> tuple[np.ndarray, list[tuple[int, int]], np.ndarray]:
    """speechmos's 9.01 s windows of ``audio`` (repeated while shorter), as bounds instead of copies: the audio they
    cut from, the (start, stop) of each distinct window, and for each of speechmos's windows the distinct one it is.

    A clip shorter than 9.01 s is repeated whole, so the result is periodic in its length: windows whose
    start offsets agree modulo that length are the same samples (a 2 s clip's 7 windows are 2 distinct
    ones) and are computed once; each still counts once per window in the mean, as in speechmos. Bounds, not a
    stack: a 5-minute clip has 291 windows (168 MB as float32), and only a call's worth is ever materialised."""
    if len(audio) == 0:
        raise ValueError("DNSMOS needs at least one sample of audio (speechmos would loop forever on an empty clip)")
    period = len(audio)
    len_samples = int(INPUT_LENGTH * fs)
    repeated = len(audio) < len_samples
    while len(audio) < len_samples:
        audio = np.append(audio, audio)
    num_hops = int(np.floor(len(audio) / fs) - INPUT_LENGTH) + 1
    rows: dict[tuple[int, int], int] = {}
    bounds, index = [], []
    for idx in range(num_hops):
        start, stop = int(idx * fs), int((idx + INPUT_LENGTH) * fs)
        if min(stop, len(audio)) - start < len_samples:
            continue
        key = (start % period if repeated else start, stop - start)
        if key not in rows:
            rows[key] = len(bounds)
            bounds.append((start, stop))
        index.append(rows[key])
    if not bounds:
        raise ValueError("DNSMOS found no full 9.01 s window in the clip")
    return audio, bounds, np.asarray(index)


def windows(audio: np.ndarray, fs: int = SR) -> tuple[np.ndarray, np.ndarray]:
    """The distinct windows of ``window_plan`` stacked (n, 144160), and the index of each of speechmos's windows."""
    audio, bounds, index = window_plan(audio, fs)
    return np.stack([audio[a:b] for a, b in bounds]), index


def p808_features(segments: np.ndarray) -> np.ndarray:
    """speechmos's ``audio_melspec(segment[:-160])`` for every window at once: (hops, 900, 120) float32."""
    import librosa

    mel = librosa.feature.melspectrogram(y=segments[:, :-160], sr=SR, n_fft=321, hop_length=160, n_mels=120)
    features = np.stack([(librosa.power_to_db(m, ref=np.max) + 40) / 40 for m in mel])
    return np.ascontiguousarray(features.transpose(0, 2, 1), dtype=np.float32)


def score(model, audio: np.ndarray) -> dict[str, float]:
    """``speechmos.dnsmos.DNSMOS(...)(audio, 16000, False)`` for a mono 16 kHz array. Like ``run(path)`` (which
    loads the file itself) there is no [-1, 1] range check: a float WAV louder than full scale scores as there."""
    from clonebench.evaluate.execution.overlap import map_items

    audio, bounds, index = window_plan(audio)

    def stacked(first: int, count: int) -> np.ndarray:  # windows first..first+count-1, copied only now
        return np.stack([audio[a:b] for a, b in bounds[first:first + count]])

    step = P808_WINDOWS_PER_CALL
    p808 = np.concatenate([model.p808_onnx_sess.run(None, {"input_1": p808_features(stacked(k, step))})[0]
                           for k in range(0, len(bounds), step)])[index, 0]
    # the 9 s model: WINDOWS_PER_CALL distinct windows per call, calls spread over the spare cores
    calls = list(range(0, len(bounds), WINDOWS_PER_CALL))
    raw = np.concatenate(map_items(lambda k: model.onnx_sess.run(
        None, {"input_1": stacked(k, WINDOWS_PER_CALL).astype(np.float32)})[0], calls))
    raw = raw[index]
    sig, bak, ovr = P_SIG(raw[:, 0]), P_BAK(raw[:, 1]), P_OVR(raw[:, 2])
    return {"ovrl_mos": float(np.mean(ovr)), "sig_mos": float(np.mean(sig)), "bak_mos": float(np.mean(bak)),
            "p808_mos": float(np.mean(p808))}
