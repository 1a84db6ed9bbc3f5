"""Each metric equals its reference library called directly on the same two files, at 16, 22.05, 24 and
44.1 kHz, for 16/24-bit and float WAVs and stereo copies of real LibriVox speech (``speech_variants``).

The reference calls are the libraries' own entry points: SpeechBrain ``verify_files``, openai-whisper and
faster-whisper ``transcribe(path, ...)``, ``speechmos.dnsmos.run(path, 16000)``, ``torch_stoi.NegSTOILoss`` on
audio loaded as upstream RVCBench loads it. SpeechBrain 1.1.2's ``verify_files`` reads audio with soundfile
(``speechbrain.dataio.audio_io.load``), not ``torchaudio.load``, so it runs here unpatched.
"""

from __future__ import annotations


from clonebench.hashing import HashCache

from tests.conftest import score_item
from tests.integration.test_openai_whisper_path import tiny_checkpoint  # noqa: F401  (a fixture)

SIM_TOLERANCE = 1e-5
DNSMOS_TOLERANCE = 1e-6


def pairs(variants: list[dict]) -> list[tuple[dict, dict]]:
    """Every variant as the generated clip against another clip's variant as the target (other rates too)."""
    n = len(variants)
    return [(variants[(i + 7) % n], variants[i]) for i in range(n)]


def test_sim_sva_equal_verify_files(ecapa, speech_variants):
    chosen = pairs(speech_variants)
    items = [score_item(g["path"], t["path"], sample_id=str(k)) for k, (t, g) in enumerate(chosen)]
    records = ecapa.score_batch(items)
    worst = 0.0
    for (target, generated), record in zip(chosen, records):
        score, decision = ecapa._model.verify_files(str(target["path"]), str(generated["path"]))
        worst = max(worst, abs(record.values["sim"] - float(score)))
        assert record.values["sva"] == float(bool(decision)), (target["kind"], generated["kind"])
    assert worst <= SIM_TOLERANCE, worst
    # a pair's score is the same alone, in another batch, in another order
    alone = [ecapa.score_batch([item])[0].values["sim"] for item in reversed(items)]
    assert alone[::-1] == [r.values["sim"] for r in records]


def test_openai_whisper_hypotheses_equal_transcribe_path(tiny_checkpoint, speech_variants):
    """openai-whisper (the tiny random checkpoint: the code path, not recognition) on every rate and format."""
    from clonebench.evaluate.scorers.whisper_openai import OpenAIWhisperScorer
    from clonebench.hashing import sha256_file

    opts = {"backend": "openai_whisper", "model": "tiny-random", "local_path": tiny_checkpoint,
            "sha256": sha256_file(tiny_checkpoint), "normalisation": "ascii_punctuation_removed_v2",
            "compute_type": "auto", "allow_hub": False}
    scorer = OpenAIWhisperScorer(opts, "cpu", HashCache(None))
    scorer.load()
    try:
        items = [score_item(v["path"], text=v["text"], sample_id=str(k)) for k, v in enumerate(speech_variants)]
        batched = [r.values["hypothesis"] for r in scorer.score_batch(items)]
        expected = [scorer._model.transcribe(str(v["path"]), language="en", task="transcribe", temperature=0.0,
                                             condition_on_previous_text=False, without_timestamps=True,
                                             fp16=False)["text"].strip() for v in speech_variants]
    finally:
        scorer.release()
    assert batched == expected
    assert all(expected)


def test_faster_whisper_hypotheses_equal_transcribe_path(speech_variants):
    from clonebench.evaluate.scorers.whisper_faster import FasterWhisperScorer

    opts = {"backend": "faster_whisper", "model": "tiny.en", "local_path": None, "sha256": None,
            "normalisation": "ascii_punctuation_removed_v2", "compute_type": "auto", "allow_hub": False}
    scorer = FasterWhisperScorer(opts, "cpu", HashCache(None))
    scorer.load()
    try:
        items = [score_item(v["path"], text=v["text"], sample_id=str(k)) for k, v in enumerate(speech_variants)]
        batched = [r.values["hypothesis"] for r in scorer.score_batch(items)]
        expected = []
        for v in speech_variants:
            segments, _ = scorer._model.transcribe(str(v["path"]), language="en", task="transcribe", beam_size=1,
                                                   best_of=1, temperature=0.0, condition_on_previous_text=False,
                                                   without_timestamps=True, vad_filter=False)
            expected.append("".join(s.text for s in segments).strip())
    finally:
        scorer.release()
    assert batched == expected
    assert all(expected)


def test_dnsmos_equals_speechmos_run_on_the_path(speech_variants):
    import speechmos.dnsmos

    from clonebench.evaluate.scorers.dnsmos import DNSMOSScorer

    scorer = DNSMOSScorer({"local_dir": None}, "cpu", HashCache(None))
    scorer.load()
    try:
        items = [score_item(v["path"], sample_id=str(k)) for k, v in enumerate(speech_variants)]
        records = scorer.score_batch(items)
    finally:
        scorer.release()
    worst = 0.0
    for variant, record in zip(speech_variants, records):
        expected = speechmos.dnsmos.run(str(variant["path"]), 16000)
        for metric, key in (("dnsmos", "ovrl_mos"), ("dnsmos_sig", "sig_mos"), ("dnsmos_bak", "bak_mos"),
                            ("dnsmos_p808", "p808_mos")):
            worst = max(worst, abs(record.values[metric] - float(expected[key])))
    assert worst <= DNSMOS_TOLERANCE, worst


def upstream_stoi(target_path, generated_path) -> float:
    """Upstream RVCBench's STOI, step by step with the libraries (torchaudio.load's tensor read via soundfile)."""
    import numpy as np
    import soundfile as sf
    import torch
    import torch.nn.functional as F
    import torchaudio
    from torch_stoi import NegSTOILoss

    waves = []
    for path in (target_path, generated_path):
        data, rate = sf.read(str(path), dtype="float32", always_2d=True)
        wave = torch.from_numpy(np.ascontiguousarray(data.T))
        if rate != 16000:
            wave = torchaudio.functional.resample(wave, rate, 16000)
        waves.append(wave.mean(dim=0))
    n = min(len(w) for w in waves)
    a, b = waves[0][:n].unsqueeze(0), waves[1][:n].unsqueeze(0)
    if n < 16000:
        a, b = F.pad(a, (0, 16000 - n)), F.pad(b, (0, 16000 - n))
    return -NegSTOILoss(sample_rate=16000)(a, b).item()


def test_stoi_equals_torch_stoi_called_directly(speech_variants, tmp_path):
    import soundfile as sf

    from clonebench.evaluate.scorers.stoi import STOIScorer

    short = tmp_path / "short.wav"  # 0.4 s: padded to 1 s as upstream pads
    data, rate = sf.read(str(speech_variants[0]["path"]))
    sf.write(str(short), data[rate: rate + int(0.4 * rate)], rate)
    chosen = pairs(speech_variants) + [(speech_variants[3], {"path": short, "kind": "short"})]
    scorer = STOIScorer({}, "cpu", HashCache(None))
    scorer.load()
    records = scorer.score_batch([score_item(g["path"], t["path"], sample_id=str(k))
                                  for k, (t, g) in enumerate(chosen)])
    values = [r.values["stoi"] for r in records]
    expected = [upstream_stoi(t["path"], g["path"]) for t, g in chosen]
    assert max(abs(a - b) for a, b in zip(values, expected)) <= 1e-6
    same = scorer.score_batch([score_item(chosen[0][0]["path"], chosen[0][0]["path"])])[0].values["stoi"]
    assert same > 0.999 and all(-1.0 <= v < same for v in values)
