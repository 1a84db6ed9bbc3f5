"""Each scorer on real human speech (pocketsphinx-testdata LibriVox clips) with the real offline models."""

from __future__ import annotations

import numpy as np
import pytest

from clonebench.core.hashing import HashCache
from clonebench.evaluate.protocols.wer_text import utterance_wer
from tests.conftest import score_item

ECAPA_OPTIONS = {"threshold": 0.25, "local_dir": None, "allow_hub": False}


def whisper_options(model: str, **extra):
    return {"backend": "faster_whisper", "model": model, "local_path": None, "sha256": None,
            "normalisation": "ascii_punctuation_removed_v2", "compute_type": "auto", "allow_hub": False, **extra}


@pytest.fixture(scope="module")
def ecapa():
    from clonebench.evaluate.scorers.ecapa import EcapaScorer

    scorer = EcapaScorer(ECAPA_OPTIONS, "cpu", HashCache(None))
    scorer.load()
    yield scorer
    scorer.release()


def test_same_speaker_scores_clearly_above_different_speaker(ecapa, human_speech):
    lib = list(human_speech["librivox"])
    cards = list(human_speech["cards"])
    same = [score_item(lib[i], lib[j], sample_id=f"same{i}{j}") for i in range(3) for j in range(3, 5)]
    different = [score_item(cards[k], lib[i], sample_id=f"diff{i}{k}") for i in range(3) for k in range(2)]
    records = ecapa.score_batch(same + different)
    same_sim = [r.values["sim"] for r in records[: len(same)]]
    diff_sim = [r.values["sim"] for r in records[len(same):]]
    assert min(same_sim) > max(diff_sim) + 0.15, (same_sim, diff_sim)
    assert all(r.values["sva"] == 1.0 for r in records[: len(same)])
    assert np.mean(same_sim) > 0.5 and np.mean(diff_sim) < 0.3


def test_ecapa_batch_equals_one_at_a_time(ecapa, human_speech):
    lib = list(human_speech["librivox"])
    items = [score_item(lib[i], lib[(i + 1) % 5], sample_id=str(i)) for i in range(5)]
    batched = [r.values["sim"] for r in ecapa.score_batch(items)]
    single = [ecapa.score_batch([item])[0].values["sim"] for item in items]
    assert batched == single  # each clip is embedded alone: a batch changes nothing


@pytest.mark.parametrize("model, limit", [("base", 0.1), ("tiny.en", 0.15)])
def test_faster_whisper_wer_on_librivox(human_speech, model, limit):
    """The references are pocketsphinx transcripts ("mister", "ill disposed"): scored with Whisper's own English
    normaliser they measure recognition; the historical normalisation is checked separately below."""
    from clonebench.evaluate.scorers.whisper_faster import FasterWhisperScorer

    scorer = FasterWhisperScorer(whisper_options(model, normalisation="whisper_english_v1"), "cpu", HashCache(None))
    scorer.load()
    try:
        items = [score_item(path, text=text) for path, text in human_speech["librivox"].items()]
        batched = scorer.score_batch(items)
        single = [scorer.score_batch([item])[0] for item in items]
        per_file = [scorer._model.transcribe(str(i.generated_path), language="en", **scorer.decoding().faster_kwargs())[0]
                    for i in items]  # clear speech: nothing falls back, so no sampling (and no seed) is involved
    finally:
        scorer.release()
    edits = sum(r.values["wer_edits"] for r in batched)
    words = sum(r.values["wer_ref_words"] for r in batched)
    assert edits / words <= limit, [r.values["hypothesis"] for r in batched]
    assert [r.values["hypothesis"] for r in batched] == [r.values["hypothesis"] for r in single]
    # the batched decoder gives what WhisperModel.transcribe gives, clip by clip
    assert [r.values["hypothesis"] for r in batched] == ["".join(s.text for s in segs).strip() for segs in per_file]


def test_dnsmos_and_mcd(human_speech):
    from clonebench.evaluate.scorers.dnsmos import DNSMOSScorer
    from clonebench.evaluate.scorers.mcd import MCDScorer

    lib = list(human_speech["librivox"])
    dnsmos = DNSMOSScorer({"local_dir": None}, "cpu", HashCache(None))
    dnsmos.load()
    values = [r.values for r in dnsmos.score_batch([score_item(p) for p in lib[:2]])]
    dnsmos.release()
    for v in values:
        assert 1.0 <= v["dnsmos"] <= 5.0 and 1.0 <= v["dnsmos_sig"] <= 5.0 and 1.0 <= v["dnsmos_bak"] <= 5.0
    mcd = MCDScorer({}, "cpu", HashCache(None))
    mcd.load()
    identical, other = mcd.score_batch([score_item(lib[1], lib[1], sample_id="a"), score_item(lib[1], lib[2], sample_id="b")])
    assert identical.values["mcd"] == pytest.approx(0.0, abs=1e-9) and other.values["mcd"] > 2.0


def test_historical_normalisation_counts_hyphen_joins():
    """ascii_punctuation_removed_v2 deletes '-' without a space: 'ill-disposed' is one word against 'ill disposed'."""
    out = utterance_wer("he was not an ill disposed young man", "He was not an ill-disposed young man.",
                        "ascii_punctuation_removed_v2")
    assert out["wer_edits"] == 2 and out["wer"] == 0.25
    assert utterance_wer("he was not an ill disposed young man", "He was not an ill-disposed young man.",
                         "whisper_english_v1")["wer"] == 0.0


def test_wer_normalisations():
    assert utterance_wer("Hello, World!", "hello world", "ascii_punctuation_removed_v2")["wer"] == 0.0
    assert utterance_wer("Hello, World!", "hello world", "lowercase_v1")["wer"] == 1.0
    numbers = utterance_wer("I have 2 cats.", "I have two cats", "ascii_punctuation_removed_v2")
    assert numbers["wer"] == 0.25 and numbers["wer_substitutions"] == 1  # numbers are not normalised
    empty = utterance_wer("one two three", "", "ascii_punctuation_removed_v2")
    assert empty["wer"] == 1.0 and empty["wer_deletions"] == 3
