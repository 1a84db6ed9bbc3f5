"""Each metric equals its reference library called directly on the same two files, at 16, 22.05, 24 and
44.1 kHz, for 16/24-bit and float WAVs and stereo copies of real LibriVox speech (``speech_variants``).

The reference calls are the libraries' own entry points: SpeechBrain ``verify_files``, openai-whisper and
faster-whisper ``transcribe(path, ...)``, ``speechmos.dnsmos.run(path, 16000)``, ``torch_stoi.NegSTOILoss`` on
audio loaded as upstream RVCBench loads it. SpeechBrain 1.1.2's ``verify_files`` reads audio with soundfile
(``speechbrain.dataio.audio_io.load``), not ``torchaudio.load``, so it runs here unpatched.
"""

from __future__ import annotations

import pytest

from clonebench.hashing import HashCache

from tests.conftest import score_item
from tests.integration.test_openai_whisper_path import tiny_checkpoint  # noqa: F401  (a fixture)

SIM_TOLERANCE = 1e-5
DNSMOS_TOLERANCE = 1e-6


def pairs(variants: list[dict]) -> list[tuple[dict, dict]]:
    """Every variant as the generated clip against another clip's variant as the target (other rates too)."""
    n = len(variants)
    return [(variants[(i + 7) % n], variants[i]) for i in range(n)]


@pytest.fixture(scope="module")
def ecapa():
    from clonebench.evaluate.scorers.ecapa import EcapaScorer

    scorer = EcapaScorer({"threshold": 0.25, "local_dir": None, "allow_hub": False}, "cpu", HashCache(None))
    scorer.load()
    yield scorer
    scorer.release()


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
