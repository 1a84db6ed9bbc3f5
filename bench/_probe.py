"""Timing and memory probes for the evaluate benchmarks, installed into a scoring process from outside (no scorer
code changes): every model's own forward calls, the audio reading around them, the scorer loads, and the RSS.

``install()`` wraps, at the libraries' boundaries (so clonebench's scorers and rvcbench's are measured alike):

- model forward (what cannot be removed without changing numbers): SpeechBrain ``SpeakerRecognition.encode_batch``
  (ECAPA: Fbank, mean-variance norm, embedding network; ``ecapa/fbank`` is timed inside it), WORLD and SPTK
  (``mcd/world+mcep``: clonebench's ``mcd_fast.mcep``, pymcd's ``wav2mcep_numpy``), the DTW and distance
  (``mcd/dtw``: ``mcd_fast.mcd_from_mceps``, pymcd's ``fastdtw`` + ``calculate_mcd_distance``), torch_stoi's
  ``NegSTOILoss.forward``, openai-whisper's encoder and decoder forwards, faster-whisper's CTranslate2 ``encode``,
  ``generate`` and ``detect_language``, its log-mel extractor, ONNX Runtime ``InferenceSession.run`` (DNSMOS);
- audio reading (overhead: decoding and resampling): SpeechBrain's ``audio_io.load`` and ``audio_normalizer``,
  ``librosa.load`` (MCD, DNSMOS), clonebench's and rvcbench's STOI loaders, Whisper's ``load_audio`` /
  ``decode_audio``;
- scorer loads (start-up): clonebench's ``Scorer.load`` and rvcbench's ``prepare``.

Each call is an interval (label, thread, start, end). ``summary(wall_start, wall_end)`` gives per label the total
seconds and calls, and the share of the wall during which no model forward ran on any thread: the overhead.
A sampler thread records the process's RSS every 10 ms; ``mark(name)`` starts a named phase, and the summary holds
each phase's peak RSS.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections import defaultdict

MODEL = "model"
AUDIO = "audio"
LOAD = "load"
_intervals: list[tuple[str, str, int, float, float]] = []  # (label, kind, thread, start, end)
_phases: list[tuple[str, float]] = []
_rss: list[tuple[float, int]] = []
_depth = threading.local()
_installed: set[str] = set()


def _rss_kib() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


def _sampler(stop: threading.Event) -> None:
    while not stop.wait(0.01):
        _rss.append((time.perf_counter(), _rss_kib()))


def mark(name: str) -> None:
    _phases.append((name, time.perf_counter()))
    _rss.append((time.perf_counter(), _rss_kib()))


def wrap(owner, attribute: str, label: str, kind: str) -> None:
    """Time every call of ``owner.attribute`` (a class or module attribute) as ``label``."""
    key = f"{id(owner)}.{attribute}"
    if key in _installed or not hasattr(owner, attribute):
        return
    _installed.add(key)
    original = getattr(owner, attribute)

    @functools.wraps(original)
    def timed(*args, **kwargs):
        depth = getattr(_depth, "value", 0)
        _depth.value = depth + 1
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            _depth.value = depth
            _intervals.append((label, kind if depth == 0 or kind != MODEL else "nested", threading.get_ident(),
                               started, time.perf_counter()))

    setattr(owner, attribute, timed)


class _TimedCT2:
    """A CTranslate2 Whisper model whose encode / generate / detect_language calls are timed (its class is an
    extension type: its methods cannot be replaced, so the instance is wrapped)."""

    def __init__(self, inner):
        object.__setattr__(self, "_inner", inner)
        for name, label in (("encode", "whisper/encode"), ("generate", "whisper/decode"),
                            ("detect_language", "whisper/detect_language")):
            holder = type("Holder", (), {name: staticmethod(getattr(inner, name))})
            wrap(holder, name, label, MODEL)
            object.__setattr__(self, name, getattr(holder, name))

    def __getattr__(self, name):
        return getattr(self._inner, name)


def install() -> None:
    """Wrap every library boundary above that is importable here."""
    import importlib

    def module(name):
        try:
            return importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a library this process does not have: nothing to wrap
            return None

    if (sb := module("speechbrain.inference.speaker")) is not None:
        wrap(sb.SpeakerRecognition, "encode_batch", "ecapa/forward", MODEL)
    if (features := module("speechbrain.lobes.features")) is not None:
        wrap(features.Fbank, "forward", "ecapa/fbank", MODEL)
    if (audio_io := module("speechbrain.dataio.audio_io")) is not None:
        wrap(audio_io, "load", "ecapa/audio (decode)", AUDIO)
    if (preprocess := module("speechbrain.dataio.preprocess")) is not None:
        wrap(preprocess.AudioNormalizer, "__call__", "ecapa/audio (resample, mono)", AUDIO)
    if (mcd_fast := module("clonebench.evaluate.scorers.mcd_fast")) is not None:
        wrap(mcd_fast, "load", "mcd/audio", AUDIO)
        wrap(mcd_fast, "mcep", "mcd/world+mcep", MODEL)
        wrap(mcd_fast, "mcd_from_mceps", "mcd/dtw", MODEL)
    if (pymcd := module("pymcd.mcd")) is not None:
        wrap(pymcd.Calculate_MCD, "load_wav", "mcd/audio", AUDIO)
        wrap(pymcd.Calculate_MCD, "wav2mcep_numpy", "mcd/world+mcep", MODEL)
        wrap(pymcd, "fastdtw", "mcd/dtw", MODEL)
        wrap(pymcd.Calculate_MCD, "calculate_mcd_distance", "mcd/dtw", MODEL)
    if (stoi := module("torch_stoi")) is not None:
        wrap(stoi.NegSTOILoss, "forward", "stoi/forward", MODEL)
    if (ours := module("clonebench.evaluate.scorers.stoi")) is not None:
        wrap(ours, "resample_mono_torchaudio", "stoi/audio", AUDIO)
        wrap(ours, "load_torchaudio_like", "stoi/audio", AUDIO)
    if (theirs := module("rvcbench.evaluation.scorers.stoi")) is not None:
        wrap(theirs.STOIScorer, "_load", "stoi/audio", AUDIO)
    if (librosa := module("librosa")) is not None:
        wrap(librosa, "load", "librosa.load (inside mcd/dnsmos audio)", AUDIO)
    if (dnsmos := module("clonebench.evaluate.scorers.dnsmos")) is not None:
        wrap(dnsmos, "load_librosa_16k", "dnsmos/audio", AUDIO)
    if (ort := module("onnxruntime")) is not None:
        wrap(ort.InferenceSession, "run", "dnsmos/onnx", MODEL)
    if (whisper := module("whisper.model")) is not None:
        wrap(whisper.AudioEncoder, "forward", "whisper/encode", MODEL)
        wrap(whisper.TextDecoder, "forward", "whisper/decode", MODEL)
    if (whisper_audio := module("whisper.audio")) is not None:
        wrap(whisper_audio, "load_audio", "whisper/audio", AUDIO)
    if (fw := module("faster_whisper.transcribe")) is not None:
        original_init = fw.WhisperModel.__init__

        def init(self, *args, **kwargs):
            original_init(self, *args, **kwargs)
            self.model = _TimedCT2(self.model)

        if "fw.init" not in _installed:
            _installed.add("fw.init")
            fw.WhisperModel.__init__ = init
        wrap(fw, "decode_audio", "whisper/audio", AUDIO)
    if (fw_audio := module("faster_whisper.audio")) is not None:
        wrap(fw_audio, "decode_audio", "whisper/audio", AUDIO)
    if (fw_features := module("faster_whisper.feature_extractor")) is not None:
        wrap(fw_features.FeatureExtractor, "__call__", "whisper/log-mel", MODEL)
    if (base := module("clonebench.evaluate.protocols.base")) is not None:
        for cls in _subclasses(base.Scorer):
            wrap(cls, "load", f"load {cls.name}", LOAD)
    if module("rvcbench.evaluation.scorers") is not None:
        for name in ("speaker:SpeakerScorer", "mcd:MCDScorer", "stoi:STOIScorer", "wer:WERScorer"):
            mod, _, cls = name.partition(":")
            if (m := module(f"rvcbench.evaluation.scorers.{mod}")) is not None:
                wrap(getattr(m, cls), "prepare", f"load {mod}", LOAD)


def _subclasses(cls) -> list:
    import importlib

    from clonebench.evaluate.protocols.registry import SCORERS

    for target in SCORERS.values():
        module_name = target.partition(":")[0]
        try:
            importlib.import_module(module_name)
        except Exception:  # noqa: BLE001 - a scorer whose packages are absent here
            pass
    out, todo = [], [cls]
    while todo:
        for sub in todo.pop().__subclasses__():
            out.append(sub)
            todo.append(sub)
    return [c for c in out if "name" in vars(c)]


def start_sampler() -> threading.Event:
    stop = threading.Event()
    threading.Thread(target=_sampler, args=(stop,), daemon=True, name="bench-rss").start()
    return stop


def _union(spans: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for start, stop in sorted(spans):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def summary(wall_start: float, wall_end: float, clips: dict[str, int] | None = None) -> dict:
    """Seconds and calls per label, model-busy seconds (the union of top-level model forwards over every thread),
    the overhead share, and peak RSS per phase (MiB)."""
    wall = wall_end - wall_start
    per = defaultdict(lambda: [0.0, 0, ""])
    for label, kind, _, start, end in _intervals:
        per[label][0] += end - start
        per[label][1] += 1
        per[label][2] = kind
    busy = _union([(s, e) for _, kind, _, s, e in _intervals if kind == MODEL])
    labels = {k: {"seconds": round(v[0], 3), "calls": v[1], "kind": v[2]} for k, v in sorted(per.items())}
    for label, entry in labels.items():
        group = label.split("/")[0]
        if clips and group in clips and entry["kind"] in (MODEL, "nested"):
            entry["per_clip_s"] = round(entry["seconds"] / max(1, clips[group]), 4)
    phases, bounds = {}, [*_phases, ("end", wall_end)]
    for (name, start), (_, stop) in zip(bounds, bounds[1:]):
        inside = [kib for t, kib in _rss if start <= t <= stop]
        phases[name] = {"seconds": round(stop - start, 3), "peak_rss_mib": round(max(inside) / 1024, 1) if inside else None}
    return {"wall_s": round(wall, 3), "model_forward_s": round(busy, 3), "overhead_s": round(wall - busy, 3),
            "overhead_share": round((wall - busy) / wall, 4) if wall > 0 else None, "labels": labels,
            "phases": phases, "peak_rss_mib": round(max(k for _, k in _rss) / 1024, 1) if _rss else None}
