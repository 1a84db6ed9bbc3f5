"""ECAPA's one-thread exact path (evaluate/execution/exact_conv.py) against torch's own two-thread path, byte for byte.

The reference is SpeechBrain's model exactly as ``verify_files`` runs it on a 2-core host: every ``nn.Conv1d`` on
torch's own ``F.conv1d``, torch at two threads. The exact path embeds on one thread with the layers that ATen would
send to oneDNN at two threads sent there. 41 clip lengths from 0.3 s to 3 min at five sample rates (one stereo),
every embedding's bytes equal; and the kernels themselves, counted with torch's profiler, are the two-thread ones.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import soundfile as sf
from scipy.signal import resample_poly

from tests.conftest import LIBRIVOX, score_item

RATES = (16000, 8000, 22050, 44100, 48000)
LENGTHS_S = [round(float(s), 2) for s in np.geomspace(0.3, 8.0, 40)] + [180.0]


def _speech() -> np.ndarray:
    return np.concatenate([sf.read(str(p), dtype="float64")[0] for p in sorted(LIBRIVOX.glob("*.wav"))])


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    folder = tmp_path_factory.mktemp("exact_conv")
    speech = _speech()
    out = []
    for k, seconds in enumerate(LENGTHS_S):
        rate = RATES[k % len(RATES)]
        n = int(seconds * 16000)
        x = np.roll(np.tile(speech, n // len(speech) + 1), -997 * k)[:n]  # another start for every clip
        if rate != 16000:
            x = resample_poly(x, rate, 16000)
        if k == 7:
            x = np.stack([x, 0.5 * np.roll(x, 41)], axis=1)  # one stereo clip (channel mean)
        path = folder / f"clip{k:02d}_{seconds}s_{rate}.wav"
        sf.write(str(path), 0.8 * x, rate, subtype="PCM_16")
        out.append(path)
    return out


@contextlib.contextmanager
def _torch_own_path(ecapa):
    """SpeechBrain's own path inside the block: every Conv1d on F.conv1d; the exact path installed again after."""
    from clonebench.evaluate.execution import exact_conv

    exact_conv.uninstall(ecapa._model.mods)
    try:
        yield
    finally:
        exact_conv.install(ecapa._model.mods)


def _references(ecapa, paths) -> list:
    """SpeechBrain's own path at two torch threads: every Conv1d on F.conv1d. One uninstall for all the clips:
    installing the exact path again scans every weight for subnormal rows (0.7-1.3 s a time, measured), which
    clip by clip was 28 s of this module's test time."""
    import torch

    from clonebench.evaluate.execution import exact_conv

    with _torch_own_path(ecapa), exact_conv.torch_threads(2), torch.inference_mode():
        return [ecapa._model.encode_batch(ecapa.load_clip(path).unsqueeze(0), None, normalize=False)
                for path in paths]


def _reference(ecapa, path):
    return _references(ecapa, [path])[0]


@pytest.mark.slow
def test_one_thread_exact_embeddings_are_the_two_thread_bytes(ecapa, clips):
    assert ecapa.exact, "the exact path is off on the pinned torch"
    assert len(clips) >= 40 and min(LENGTHS_S) <= 0.3 and max(LENGTHS_S) >= 180
    exact = [ecapa.embed(p).numpy().tobytes() for p in clips]
    references = [r.numpy().tobytes() for r in _references(ecapa, clips)]
    differ = [p.name for p, mine, theirs in zip(clips, exact, references) if mine != theirs]
    assert not differ, f"exact one-thread embeddings differ from the two-thread path for {differ}"


def _kernels(fn) -> dict:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    names = [e.key for e in prof.key_averages()]
    counts = {e.key: e.count for e in prof.key_averages()}
    return {"mkldnn": counts.get("aten::mkldnn_convolution", 0),
            "native": sum(counts[n] for n in names if n in ("aten::thnn_conv2d", "aten::slow_conv_dilated2d"))}


@pytest.mark.slow
def test_the_exact_path_runs_the_two_thread_kernels(ecapa, clips):
    """Counted with the profiler on an 8 s clip: the two-thread path's oneDNN and native convolutions, which a
    plain one-thread run does not use (it sends the large 1x1 layers to the native kernel)."""
    import torch

    from clonebench.evaluate.execution import exact_conv

    clip = clips[-2]
    two = _kernels(lambda: _reference(ecapa, clip))
    exact = _kernels(lambda: ecapa.embed(clip))
    with _torch_own_path(ecapa), exact_conv.torch_threads(1), torch.inference_mode():
        plain = _kernels(lambda: ecapa._model.encode_batch(ecapa.load_clip(clip).unsqueeze(0), None,
                                                           normalize=False))
    assert exact == two, (exact, two)
    assert plain["mkldnn"] < two["mkldnn"] and plain["native"] > two["native"], (plain, two)


@pytest.mark.slow
def test_workers_and_this_process_share_fingerprint_and_bytes(tmp_path, clips):
    """One fingerprint (the protocol's two threads, not the one computing) and the same bytes, whether the clips
    are embedded here at any torch thread count or shared out over worker processes."""
    from types import SimpleNamespace

    from clonebench.core.hashing import HashCache
    from clonebench.evaluate.execution import exact_conv
    from clonebench.evaluate.execution.cache import MetricCache
    from clonebench.evaluate.scoring import run_group

    short = clips[:24]
    items = [score_item(c, short[(k + 5) % len(short)], sample_id=f"s{k}") for k, c in enumerate(short)]
    seen = {}
    for name, workers, threads in (("here-1", 1, 1), ("here-2", 1, 2), ("workers", 2, 2)):
        options = {"ecapa": {"threshold": 0.25, "local_dir": None, "allow_hub": False, "workers": workers},
                   "whisper": {"backend": "faster_whisper"}}
        settings = SimpleNamespace(evaluation=SimpleNamespace(scorer_options=options, batch_size=8))
        with exact_conv.torch_threads(threads):
            provenance, records = run_group("ecapa", settings, "cpu", items, MetricCache(tmp_path / name, None),
                                            HashCache(None))
        assert all(r.ok for r in records.values())
        seen[name] = (provenance["fingerprint"], provenance["execution"]["cpu_threads"],
                      {k: r.values for k, r in sorted(records.items())})
    assert seen["here-1"] == seen["here-2"] == seen["workers"]
    assert seen["workers"][1] == 2


def test_an_unverified_torch_keeps_torchs_own_threads(monkeypatch, caplog):
    """The fallback: no routed layer, embeddings on torch's own thread count, which the fingerprint then records."""
    from clonebench.core.hashing import HashCache
    from clonebench.evaluate.execution import exact_conv
    from clonebench.evaluate.scorers import ecapa as ecapa_module

    monkeypatch.setattr(exact_conv, "VERIFIED_TORCH", ("0.0.1",))
    monkeypatch.setattr(ecapa_module, "_warned", [])
    scorer = ecapa_module.EcapaScorer({"threshold": 0.25, "local_dir": None, "allow_hub": False}, "cpu",
                                      HashCache(None))
    scorer.load()
    try:
        assert not scorer.exact and scorer.computing_threads(3) == 3
        assert not any("_conv_forward" in vars(m) for m in scorer._model.mods.modules())
        assert "exact path off" in caplog.text and "torch==0.0.1" in caplog.text
    finally:
        scorer.release()
