"""MCD fast path == pymcd ``Calculate_MCD("dtw").calculate_mcd`` (exact ==) on real speech, several rates/lengths."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
from pymcd.mcd import Calculate_MCD

from clonebench.evaluate.scorers import mcd_fast


def _copy(src, dst, rate, seconds=None, start=0.0, subtype="PCM_16"):
    import librosa

    audio, sr = sf.read(str(src), dtype="float32")
    audio = audio[int(start * sr):]
    if seconds is not None:
        audio = audio[:int(seconds * sr)]
    if rate != sr:
        audio = librosa.resample(audio, orig_sr=sr, target_sr=rate)
    sf.write(str(dst), audio, rate, subtype=subtype)
    return dst


@pytest.fixture(scope="module")
def speech_pairs(human_speech, tmp_path_factory):
    d = tmp_path_factory.mktemp("mcd")
    lib = list(human_speech["librivox"])
    cards = list(human_speech["cards"])
    pairs = [(lib[0], lib[1]), (lib[2], cards[0]), (cards[1], cards[2])]  # native 16 kHz files
    for k, rate in enumerate([16_000, 22_050, 24_000, 44_100]):
        target = _copy(lib[k % len(lib)], d / f"t{rate}.wav", 24_000 if rate != 24_000 else 22_050,
                       seconds=1.5 + k, start=0.3 * k)
        generated = _copy(lib[(k + 1) % len(lib)], d / f"g{rate}.wav", rate, seconds=0.8 + 1.7 * k,
                          subtype="FLOAT" if k % 2 else "PCM_16")
        pairs.append((target, generated))
    # very short clips: the coarsest fastdtw level and the plain dtw on under three frames
    pairs.append((_copy(lib[3], d / "short_a.wav", 44_100, seconds=0.012),
                  _copy(lib[4], d / "short_b.wav", 24_000, seconds=0.3)))
    pairs.append((_copy(cards[3], d / "c_a.wav", 22_050, seconds=0.04),
                  _copy(cards[4], d / "c_b.wav", 16_000, seconds=0.05)))
    pairs.append((lib[0], lib[0]))  # identical: a diagonal path of zero cost
    return pairs


def test_fast_path_bitwise_equals_pymcd(speech_pairs):
    reference = Calculate_MCD(MCD_mode="dtw")
    for target, generated in speech_pairs:
        expected = reference.calculate_mcd(str(target), str(generated))
        got = mcd_fast.calculate_mcd(target, generated)
        assert got == expected, (target.name, generated.name, got, expected)
        assert isinstance(got, float) or np.isscalar(got)


def test_features_equal_pymcd_features(human_speech):
    # the envelope without d4c and the direct C mcep give pymcd's feature matrix exactly
    reference = Calculate_MCD(MCD_mode="dtw")
    path = list(human_speech["cards"])[0]
    wav = reference.load_wav(str(path), sample_rate=reference.SAMPLING_RATE)
    assert np.array_equal(mcd_fast.load(path), wav)
    assert np.array_equal(mcd_fast.mcep(wav), reference.wav2mcep_numpy(wav))


def test_scorer_equals_pymcd_with_shared_targets(speech_pairs):
    from clonebench.core.hashing import HashCache
    from clonebench.evaluate.scorers.mcd import MCDScorer
    from tests.conftest import score_item

    reference = Calculate_MCD(MCD_mode="dtw")
    target = speech_pairs[0][0]
    generated = [g for _, g in speech_pairs[3:7]]
    items = [score_item(g, target, sample_id=f"s{k}") for k, g in enumerate(generated)]
    items.append(score_item(target, generated[0], sample_id="swapped"))
    scorer = MCDScorer({}, "cpu", HashCache(None))
    scorer.load()
    try:
        records = scorer.score_batch(items)
    finally:
        scorer.release()
    for item, record in zip(items, records):
        assert record.values["mcd"] == reference.calculate_mcd(str(item.target_path), str(item.generated_path))
