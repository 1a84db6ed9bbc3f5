"""Each metric equals its reference library called directly on the same two files, at 16, 22.05, 24 and
44.1 kHz, for 16/24-bit and float WAVs and stereo copies of real LibriVox speech (``speech_variants``).

The reference calls are the libraries' own entry points: SpeechBrain ``verify_files``, faster-whisper
``transcribe(path, ...)`` and ``speechmos.dnsmos.run(path, 16000)``. SpeechBrain 1.1.2's ``verify_files`` reads
audio with soundfile (``speechbrain.dataio.audio_io.load``), not ``torchaudio.load``, so it runs here unpatched.
The peer harness's own scorers (rvcbench 2.2.1: SIM, SVA, MCD, STOI, openai-whisper WER) are the reference of
``test_peer_parity.py``.
"""

from __future__ import annotations

import pytest

from clonebench.core.hashing import HashCache
from tests.conftest import VARIANT_KINDS, score_item

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


def faster_reference(scorer, path, sample_id: str) -> tuple[str, list[float]]:
    """faster-whisper's own ``WhisperModel.transcribe(path, ...)`` with the protocol's options, on a fresh model
    whose CTranslate2 RNG is seeded with the sample's seed before it first samples; and the temperatures used."""
    import ctranslate2
    from faster_whisper import WhisperModel

    from clonebench.evaluate.protocols.sample_seed import scoring_seed

    model = WhisperModel(**scorer._model_args)
    ctranslate2.set_random_seed(scoring_seed(42, sample_id))
    segments, _ = model.transcribe(str(path), language="en", **scorer.decoding().faster_kwargs())
    segments = list(segments)
    return "".join(s.text for s in segments).strip(), [s.temperature for s in segments]


@pytest.fixture(scope="module")
def fallback_clips(human_speech, tmp_path_factory):
    """Real speech that tiny.en is unsure of: each LibriVox clip reversed, and played at double speed (measured:
    several of them fail the log-probability threshold at temperature 0 and are decoded again by sampling)."""
    import soundfile as sf

    folder = tmp_path_factory.mktemp("fallback_clips")
    out = []
    for path, text in list(human_speech["librivox"].items())[:3]:
        audio, rate = sf.read(str(path), dtype="float32")
        for kind, changed in (("reversed", audio[::-1]), ("double_speed", audio[::2])):
            target = folder / f"{path.stem}-{kind}.wav"
            sf.write(str(target), changed, rate, subtype="PCM_16")
            out.append({"path": target, "text": text})
    return out


def test_faster_whisper_hypotheses_equal_transcribe_path(speech_variants, fallback_clips):
    """The batched first pass at temperature 0 plus ``transcribe`` where faster-whisper would fall back gives, clip by
    clip, what ``WhisperModel.transcribe`` gives with the same options and the sample's seed, on every rate and on
    clips that trigger the fallback; and it gives the same again in another batch and order."""
    from clonebench.evaluate.scorers.whisper_faster import FasterWhisperScorer

    opts = {"backend": "faster_whisper", "model": "tiny.en", "local_path": None, "sha256": None,
            "normalisation": "ascii_punctuation_removed_v2", "compute_type": "auto", "allow_hub": False,
            "seed": 42, "decoding": "fallback_v1"}
    scorer = FasterWhisperScorer(opts, "cpu", HashCache(None))
    scorer.load()
    clips = speech_variants[:len(VARIANT_KINDS)] + fallback_clips  # one clip of every kind, and the unsure ones
    try:
        items = [score_item(v["path"], text=v["text"], sample_id=f"{k:08x}" + "0" * 56) for k, v in enumerate(clips)]
        batched = [r.values["hypothesis"] for r in scorer.score_batch(items)]
        again = {r.sample_id: r.values["hypothesis"] for r in scorer.score_batch(items[::-1][:5])}
        expected, temperatures = zip(*(faster_reference(scorer, v["path"], item.sample_id)
                                       for v, item in zip(clips, items)))
    finally:
        scorer.release()
    assert list(batched) == list(expected)
    assert all(batched[:len(VARIANT_KINDS)])
    assert any(t > 0 for used in temperatures for t in used), temperatures  # the fallback was exercised
    assert again == {item.sample_id: text for item, text in zip(items, batched) if item.sample_id in again}


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
