import hashlib
import json

from clonebench.core.records import PairRow
from clonebench.data.identity import input_fingerprint, sample_id
from clonebench.data.manifest import Selection, build_samples
from tests.conftest import LIBRITTS16

EXPECTED_SEEDS = [131, 140, 218, 226, 597, 609, 661, 680, 692, 708, 1096, 1115, 1354, 1387, 1897, 1925]


def _row(**kw):
    base = dict(dataset_name="LibriTTS", split="default", pair_id="p1", speaker_id="121", prompt_file_name="a.wav",
                target_file_name="b.wav", prompt_text="x", target_text="y", prompt_language="EN",
                target_language="EN", source_index=3)
    base.update(kw)
    return PairRow(**base)


def test_sample_id_follows_the_convention_exactly():
    row = _row(manifest_variant="speaker")
    expected = hashlib.sha256(json.dumps({"dataset_name": "LibriTTS", "split": "default", "pair_id": "p1",
                                          "speaker_id": "121", "manifest_variant": "speaker"}, sort_keys=True,
                                         ensure_ascii=False).encode("utf-8")).hexdigest()
    assert sample_id(row) == expected


def test_manifest_variant_only_counts_when_present():
    without = sample_id(_row())
    expected = hashlib.sha256(json.dumps({"dataset_name": "LibriTTS", "split": "default", "pair_id": "p1",
                                          "speaker_id": "121"}, sort_keys=True).encode()).hexdigest()
    assert without == expected
    assert sample_id(_row(manifest_variant="speaker")) != without


def test_libritts16_seeds_and_stable_fingerprint():
    samples = build_samples(LIBRITTS16, None, Selection(), 42, verify_audio_files=False)
    assert [s.seed for s in samples] == EXPECTED_SEEDS
    assert len({s.sample_id for s in samples}) == 16
    again = build_samples(LIBRITTS16, None, Selection(), 7, verify_audio_files=False)
    assert input_fingerprint(samples) == input_fingerprint(again)  # the seed is not an input
    assert [s.seed for s in again] == [x - 35 for x in EXPECTED_SEEDS]


def test_fingerprint_changes_with_any_input():
    samples = build_samples(LIBRITTS16, None, Selection(), 42, verify_audio_files=False)
    assert input_fingerprint(samples) != input_fingerprint(samples[:-1])
    assert input_fingerprint(samples) != input_fingerprint(list(reversed(samples)))
