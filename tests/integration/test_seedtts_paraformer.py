"""Seed-TTS-eval's Chinese WER scorer (``seed_wer_zh``) end to end on a tiny RANDOMLY INITIALISED FunASR
SeACo-Paraformer folder (tests/tiny_models.py) and eSpeak NG Mandarin clips: the real loading code (local folder,
sha256 lock, ``funasr.AutoModel`` by path), the benchmark's ``generate(input=path, batch_size_s=300)`` call, zhconv
and the text rule. The numbers mean nothing; they must be finite, deterministic and follow the rule."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("funasr", reason="seed_wer_zh needs funasr (installed --no-deps, see the scorer)")
pytest.importorskip("zhconv", reason="seed_wer_zh needs zhconv (the eval extra)")
pytest.importorskip("zhon", reason="seed_wer_zh needs zhon (the eval extra)")

from clonebench.core.hashing import HashCache, sha256_file  # noqa: E402
from clonebench.evaluate.protocols.assets import AssetError  # noqa: E402
from clonebench.seedtts.text import seedtts_wer, zh_simplified  # noqa: E402
from tests.conftest import espeak_clips, score_item  # noqa: E402
from tests.peer import one_torch_thread  # noqa: E402

TEXTS = ("你好，世界。", "我们是中国人！", "「他说：好的」")


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    from tests.tiny_models import write_tiny_paraformer

    return write_tiny_paraformer(tmp_path_factory.mktemp("tiny_paraformer"))


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    spoken = {f"zh{n}": ("cmn", text) for n, text in enumerate(TEXTS)}
    paths = espeak_clips(tmp_path_factory.mktemp("seedtts_zh_clips"), spoken)
    return list(zip(paths.values(), TEXTS))


def scorer_for(folder, **options):
    from clonebench.seedtts.seedtts_paraformer import SeedTTSParaformerScorer

    return SeedTTSParaformerScorer({"local_path": folder, "sha256": sha256_file(folder / "model.pt"), **options},
                                   "cpu", HashCache(None))


def test_scores_espeak_clips_deterministically(tiny_folder, clips):
    import torch

    items = [score_item(path, text=text, language="zh-CN") for path, text in clips]
    runs = []
    with one_torch_thread():
        for _ in range(2):
            scorer = scorer_for(tiny_folder)
            scorer.load()
            try:
                runs.append(scorer.score_batch(items))
            finally:
                scorer.release()
        assert torch.get_num_threads() == 1  # FunASR's own default (4 threads) is not applied
    first, again = runs
    assert [r.values for r in first] == [r.values for r in again]
    for record, (_, text) in zip(first, clips):
        assert record.ok, record.error
        values = record.values
        assert set(values) == {"seed_wer_zh", "seed_wer_zh_sub", "seed_wer_zh_del", "seed_wer_zh_ins",
                               "seed_hypothesis_zh"}
        assert values["seed_hypothesis_zh"] == zh_simplified(values["seed_hypothesis_zh"])
        assert all(math.isfinite(values[k]) and values[k] >= 0 for k in values if k != "seed_hypothesis_zh")
        rule = seedtts_wer(text, values["seed_hypothesis_zh"], "zh")
        assert values["seed_wer_zh"] == rule["wer"] and values["seed_wer_zh_sub"] == rule["substitutions"]
        assert values["seed_wer_zh_del"] == rule["deletions"] and values["seed_wer_zh_ins"] == rule["insertions"]


def test_english_pairs_are_sample_errors(tiny_folder, clips):
    scorer = scorer_for(tiny_folder)
    scorer.load()
    try:
        (record,) = scorer.score_batch([score_item(clips[0][0], text="hello", language="en")])
    finally:
        scorer.release()
    assert not record.ok and "seed_wer_en" in record.error


def test_lock_and_sources(tiny_folder, tmp_path):
    from clonebench.seedtts.seedtts_paraformer import SeedTTSParaformerScorer

    with pytest.raises(AssetError, match=r"model.pt has sha256 [0-9a-f]{64}, the lock says 0{64}"):
        scorer_for(tiny_folder, sha256="0" * 64).load()
    with pytest.raises(AssetError, match="no sha256 lock is recorded"):
        SeedTTSParaformerScorer({"local_path": tiny_folder}, "cpu", HashCache(None)).load()
    with pytest.raises(AssetError, match="paraformer_local_path"):
        SeedTTSParaformerScorer({"local_path": None, "sha256": "a" * 64}, "cpu", HashCache(None)).load()
    with pytest.raises(AssetError, match="lacks"):
        SeedTTSParaformerScorer({"local_path": tmp_path, "sha256": "a" * 64}, "cpu", HashCache(None)).load()


def test_preflight_names_what_is_missing(tiny_folder):
    from clonebench.seedtts.seedtts_paraformer import SeedTTSParaformerScorer

    SeedTTSParaformerScorer.preflight({"local_path": tiny_folder, "sha256": "a" * 64})
    with pytest.raises(AssetError, match="paraformer_local_path .*paraformer_sha256"):
        SeedTTSParaformerScorer.preflight({"local_path": tiny_folder, "sha256": None})
