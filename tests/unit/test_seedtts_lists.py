"""Seed-TTS-eval meta lists read as pair sets (data/seedtts.py), their outputs named <utt>.wav, and the results per
test set with missing outputs counted as failures or, marked, skipped (seedtts/summary.py)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from clonebench.core.errors import ClonebenchError, ManifestError
from clonebench.data.seedtts import benchmark_set, meta_rows
from clonebench.external.pair_sets import from_manifest
from clonebench.external.submitted import check_folder
from clonebench.report.tables import ResultTable
from clonebench.seedtts.summary import load, markdown, summarise


def wav(path, seconds=1.0, freq=220.0, rate=16_000):
    t = np.arange(int(seconds * rate)) / rate
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, (0.3 * np.sin(2 * np.pi * freq * t) * np.hanning(len(t))).astype(np.float32), rate,
             subtype="PCM_16")
    return path


def test_four_and_five_field_lines_become_pairs_named_as_papers_name_the_test_sets(tmp_path):
    text = ("u1|Prompt one.|wavs/p1.wav|Say this.\n\n"
            "u2|提示。|wavs/p2.wav|说这个。|wavs/t2.wav\n")
    rows = meta_rows(text, tmp_path / "zh" / "meta.lst")
    assert [r["pair_id"] for r in rows] == ["u1", "u2"]
    assert rows[0]["target_file_name"] == "wavs/p1.wav"  # no ground truth: the prompt stands in (SIM-o)
    assert rows[1]["target_file_name"] == "wavs/t2.wav" and rows[1]["target_text"] == "说这个。"
    assert {r["target_language"] for r in rows} == {"zh"}  # the list's folder decides
    assert [r["source_row"] for r in rows] == [1, 3] and rows[0]["dataset_name"] == "test-zh"
    assert benchmark_set(tmp_path / "en" / "meta.lst") == "test-en"
    assert benchmark_set(tmp_path / "zh" / "hardcase.lst") == "test-hard"
    assert benchmark_set(tmp_path / "lists" / "my list.lst") == "seedtts-lists-my-list"
    mixed = meta_rows("a|Hi.|p.wav|Hello there.\nb|你好。|p.wav|你好吗？\n", tmp_path / "lists" / "x.lst")
    assert [r["target_language"] for r in mixed] == ["en", "zh"]  # elsewhere: CJK text is zh


def test_voice_conversion_and_editing_lines_are_refused_each_by_line(tmp_path):
    with pytest.raises(ManifestError) as raised:
        meta_rows("ok|a|p.wav|b\nvc|src.wav\nedit|a|b|c|d|e\n", tmp_path / "en" / "meta.lst")
    message = str(raised.value)
    assert "line 2: 2 '|'-separated fields" in message and "line 3: 6 '|'-separated fields" in message


def test_a_folder_of_utt_wavs_is_matched_and_hashes_are_recorded(tmp_path):
    root = tmp_path / "bench" / "en"
    wav(root / "wavs" / "p1.wav", freq=200), wav(root / "wavs" / "p2.wav", freq=300)
    (root / "meta.lst").write_text("u1|Prompt one.|wavs/p1.wav|Say this.\nu2|Prompt two.|wavs/p2.wav|And this.\n")
    pair_set = from_manifest(root / "meta.lst", None)
    assert pair_set.task == "test-en" and pair_set.origin["format"] == "seedtts_meta_list"
    assert len(pair_set.origin["manifest_sha256"]) == 64
    assert [s.prompt.sha256 for s in pair_set.samples][0] != ""
    out = tmp_path / "out"
    wav(out / "u1.wav", seconds=1.5, freq=440)  # the benchmark's naming: <utt>.wav
    check = check_folder(out, pair_set)
    kinds = {f.output_id: f.kind for f in check.files}
    assert kinds == {"test-en__u1": None, "test-en__u2": "missing"}  # None: usable


def table(rows):
    return ResultTable(label="run", rows=rows)


def test_missing_outputs_count_as_failures_unless_the_scripts_rule_is_asked_for():
    rows = [{"seed_wer_en": "0.1", "seed_sim": "0.7"}, {"seed_wer_en": "0.3", "seed_sim": "0.5"},
            {"seed_wer_en": "", "seed_sim": ""}]
    counted = summarise(table(rows), "test-en")
    assert math.isclose(counted.metrics["seed_wer"].mean, (0.1 + 0.3 + 1.0) / 3)
    assert math.isclose(counted.metrics["seed_sim"].mean, (0.7 + 0.5 + 0.0) / 3)
    assert counted.scored == {"seed_wer": 2, "seed_sim": 2} and counted.listed == 3
    skipped = summarise(table(rows), "test-en", "skip")
    assert math.isclose(skipped.metrics["seed_wer"].mean, 0.2) and skipped.metrics["seed_wer"].n == 2
    text = markdown([skipped])
    assert "| test-en | run | 20.00 [" in text and "SKIPPED (scripts)" in text and "2/3" in text
    assert "for comparison with published numbers only" in text
    assert "counted as failures" in markdown([counted])


def test_every_row_names_its_system_in_every_format():
    """Two runs of one test set are two rows told apart by their system (run name; the folder when names tie)."""
    rows = [{"seed_wer_en": "0.1", "seed_sim": "0.7"}]
    results = [summarise(ResultTable(label=label, rows=rows, run_dir=Path(f"/r/{folder}")), "test-en")
               for label, folder in (("model-a", "1"), ("model|b", "2"), ("same", "3"), ("same", "4"))]
    lines = markdown(results).splitlines()
    assert lines[0].startswith("| test set | system | WER (%)")
    assert [line.split(" | ")[1] for line in lines[2:6]] == ["model-a", "model\\|b", "/r/3", "/r/4"]
    assert [r.as_dict()["system"] for r in results] == ["model-a", "model|b", "same", "same"]  # JSON


def test_a_name_that_contradicts_the_runs_meta_list_is_refused():
    from clonebench.seedtts.summary import run_test_set

    english = ResultTable(label="run", rows=[], run_dir=Path("/r/en-run"), dataset_manifest="/data/seedtts/en/meta.lst")
    assert run_test_set(english) == run_test_set(english, "test-en") == "test-en"
    with pytest.raises(ClonebenchError, match="generated from /data/seedtts/en/meta.lst, which is test-en, not "
                                              "test-zh; drop the name"):
        run_test_set(english, "test-zh")
    other = ResultTable(label="run", rows=[], dataset_manifest="/data/mine.json")  # not a meta list: the name says
    assert run_test_set(other, "test-zh") == "test-zh"


def test_a_run_without_the_protocols_columns_or_a_list_is_refused_with_the_fix(tmp_path):
    with pytest.raises(ClonebenchError, match="evaluation.metrics=\\[seed_wer_en,seed_sim\\]"):
        summarise(table([{"wer": "0.1"}]), "test-en")
    with pytest.raises(ClonebenchError, match="missing-output rule"):
        summarise(table([{"seed_wer_en": "0.1"}]), "test-en", "drop")
    with pytest.raises(ClonebenchError):
        load([str(tmp_path / "nowhere")])


def test_the_published_table_is_derived_from_its_data_file_and_shown_marked_and_cited(tmp_path):
    import importlib.util
    import json

    from clonebench.seedtts.published import LABEL, published_markdown
    from tests.conftest import REPO

    spec = importlib.util.spec_from_file_location("build", REPO / "scripts" / "build_seedtts_published.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "published.json"
    assert module.main(["--output", str(out)]) == 0
    committed = REPO / "reproduction" / "seedtts" / "published_table.json"
    assert json.loads(out.read_text()) == json.loads(committed.read_text()), \
        "stale: run python scripts/build_seedtts_published.py"
    text = published_markdown(["test-zh", "test-en"])
    assert LABEL in text and "| Seed-TTS (ICL) (published) | 1.12 | 0.796 | 2.25 | 0.762 |" in text
    assert "| CosyVoice 2 (published) | 1.45 | – | 2.57 | – |" in text  # unchecked cells are never guessed
    assert "arXiv:2406.02430" in text
    bad = tmp_path / "bad.csv"
    bad.write_text("system,test_set,wer_percent,sim,source,where,checked_against\nX,test-fr,1,0.5,s,w,c\n")
    with pytest.raises(SystemExit, match="test-fr"):
        module.main(["--sources", str(bad), "--output", str(tmp_path / "x.json")])


def test_compare_never_pairs_seed_tts_numbers_with_rvcbench_ones():
    import numpy as np

    from clonebench.report.multi_compare import compare_systems
    from clonebench.report.systems import System

    def system(label, metric, shift):
        rng = np.random.default_rng(len(label))
        rows = [{"sample_id": f"p{k}", "pair_id": f"p{k}", "speaker_id": f"s{k % 4}",
                 metric: float(0.6 + shift + rng.normal(0, 0.02))} for k in range(12)]
        summary = {metric: {"mean": float(np.mean([r[metric] for r in rows])), "n_valid": 12, "n_requested": 12}}
        group = "seedtts_sim" if metric == "seed_sim" else "ecapa"
        table = ResultTable(label=label, rows=rows, status="complete", metrics_summary=summary)
        return System(label, [table], [{group: {"fingerprint": group[0] * 64}}])

    seed_a, seed_b = system("A", "seed_sim", 0.0), system("B", "seed_sim", 0.05)
    result = compare_systems([seed_a, seed_b], draws=200)
    assert list(result["metrics"]) == ["seed_sim"] and result["metrics"]["seed_sim"]["higher_is_better"]
    with pytest.raises(ClonebenchError, match="not scored by every run"):
        compare_systems([seed_a, system("C", "sim", 0.0)], metrics=["seed_sim"], draws=200)
    with pytest.raises(ClonebenchError):
        compare_systems([seed_a, system("C", "sim", 0.0)], draws=200)  # nothing in common to compare
