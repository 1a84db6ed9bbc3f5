"""Suite runs over real loopback HTTP (the stand-in Fish server) on synthetic data in the RVCBench layout (eSpeak NG
recordings, the selection files rewritten with their hashes): the real selection files are refused when the data
does not match them, naming task, row and file; a core-v1 subset with an anchor, a group_by task and a derived
task is generated, resumed with 0 requests and scored with the tasks' own protocol; its summary, paired and
upstream changes, group breakdowns and submission.json (read by rvcbench's compare) follow."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import httpx
import pytest

from clonebench.core.errors import ClonebenchError
from tests.conftest import OFFLINE_SCORERS, suite_run
from tests.tiny_models import write_tiny_utmos


EVERY = 2  # core_standin keeps every EVERY-th row: background/background-clean 10 of 20, audioshift 12 of 24


def received(url: str) -> int:
    return sum(1 for r in httpx.get(f"{url}/_standin/received", timeout=30).json() if r["path"] == "/v1/tts")


def test_real_selection_files_are_refused_naming_task_row_and_file(onboarding_standin, standin, tmp_path):
    """The package's onboarding-v1 against data whose audio differs from its selection: every file of every task
    is reported at once, in the error and in input_problems.txt, and nothing is sent."""
    with pytest.raises(ClonebenchError) as caught:
        suite_run(tmp_path, "suite/onboarding_v1", standin.url, f"dataset.root_path={onboarding_standin / 'dataset'}")
    message = str(caught.value)
    assert "suite onboarding-v1 (Nanboy/RVCBench at revision be01b27c45d921f121a0edf86da0fd96b069b169): 104 input " \
           "problem(s) in 3 task(s)" in message
    for task in ("libritts: 32 problem(s)", "vctk: 32 problem(s)", "robotcall: 40 problem(s)"):
        assert f"task {task}" in message
    assert "row 0 (pair_id 'LibriTTS-121-000039'): prompt_file_name " in message
    assert "audios/121/121_127105_000043_000007.wav has sha256" in message
    assert "libritts16_v1.selection.json says a572b3155d7e82e77aad127a259333da4cc2cd59407e1969702cc5d93afe7c80" in message
    assert "no selected task has all its inputs" in message
    listing = (tmp_path / "results" / "suite" / "input_problems.txt").read_text().splitlines()
    assert len(listing) == 104 and all(line.startswith("task ") for line in listing)
    assert received(standin.url) == 0
    record = json.loads((tmp_path / "results" / "suite" / "suite_manifest.json").read_text())
    assert record["status"] == "failed" and record["suite"]["hf_revision"].startswith("be01b27c")


def test_missing_inputs_name_the_tasks_that_can_run(onboarding_standin, standin, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(onboarding_standin / "dataset", data)
    shutil.rmtree(data / "VCTK")
    folder = onboarding_standin / "suite" / "onboarding_v1"
    with pytest.raises(ClonebenchError, match=r"(?s)task vctk: 32 problem\(s\).*not found at .*VCTK/audios.*"
                                              r"Fix: run the tasks whose inputs are complete with "
                                              r"suite.tasks=\[libritts,robotcall\]"):
        suite_run(tmp_path, "suite/onboarding_v1", standin.url, f"dataset.root_path={data}", f"suite.name={folder}")
    assert received(standin.url) == 0


@pytest.fixture(scope="module")
def core_standin(tmp_path_factory):
    from clonebench.demo.suite_dataset import build_suite_standin

    root = tmp_path_factory.mktemp("core_standin")
    # every 2nd row of each task (EVERY): background and background-clean keep the same pair ids (the anchor still
    # pairs every row), every noise still present (the noise breakdown keeps its groups), 12 of audioshift's 24 rows;
    # the properties below are per row or per task, so half the rows check them at half the generation and scoring
    return build_suite_standin("core-v1", root, ["background", "compression-narrowband"], every=EVERY), root / "dataset"


@pytest.fixture(scope="module")
def core_generated(core_standin, tmp_path_factory):
    """background (anchor background-clean, group_by noise) and compression-narrowband (derived from audioshift,
    group_by accent/gender/age_group), generated once against the stand-in."""
    from clonebench.standin import running_standin

    folder, data = core_standin
    tmp = tmp_path_factory.mktemp("core_run")
    with running_standin(max_lifetime=900) as server:
        first, suite_dir = suite_run(tmp, "suite/core_v1", server.url, f"suite.name={folder}",
                                     f"dataset.root_path={data}", "suite.tasks=[background,compression-narrowband]",
                                     "+vc.generate_only=true", "suite.model=stand-in")
        sent_first = received(server.url)
        resumed, resumed_dir = suite_run(tmp, "suite/core_v1", server.url, f"suite.name={folder}",
                                         f"dataset.root_path={data}", "+vc.generate_only=true",
                                         "suite.tasks=[background,compression-narrowband]", f"vc.resume_from={suite_dir}",
                                         run_dir=tmp / "results" / "resumed")
        sent_resume = received(server.url) - sent_first
    return {"tmp": tmp, "first": first, "dir": suite_dir, "sent": sent_first, "resumed": resumed,
            "resumed_dir": resumed_dir, "sent_resume": sent_resume, "folder": folder, "data": data}


def test_core_subset_generates_every_task_as_a_run_and_resumes_with_no_request(core_generated, capsys):
    from clonebench.cli.main import main as cli

    suite_dir = core_generated["dir"]
    assert core_generated["first"].status == "generated"
    tasks = {p.name for p in (suite_dir / "tasks").iterdir()}
    assert tasks == {"audioshift", "background-clean", "background"}
    gate_requests = 3  # the determinism probe (2) and the second reference, once for the whole suite
    assert core_generated["sent"] == (24 + 20 + 20) // EVERY + gate_requests
    manifests = {t: json.loads((suite_dir / "tasks" / t / "run_manifest.json").read_text()) for t in tasks}
    shared = [t for t, m in manifests.items() if m["reference_check"].get("shared_from")]
    assert len(shared) == 2 and all(m["reference_check"]["status"] == "passed" for m in manifests.values())
    for name, manifest in manifests.items():
        assert manifest["status"] == "generated" and manifest["seed_honoured"] is True
        assert manifest["suite"]["hf_revision"] == "a932bd08d6858f14bdda52356dde5a7b771f0245"
        assert manifest["suite"]["task"] == name and manifest["suite"]["selected_tasks"]
        seeds = {s["pair_id"]: s["seed"] for s in manifest["samples"]}
        assert all(seeds[s["pair_id"]] == 42 + s["source_index"] for s in manifest["samples"])
    assert core_generated["sent_resume"] == 0
    resumed = core_generated["resumed_dir"]
    for name in tasks:
        manifest = json.loads((resumed / "tasks" / name / "run_manifest.json").read_text())
        assert manifest["resumed_from"]["reused"] == len(manifest["samples"]) and manifest["status"] == "generated"
        assert manifest["resume_origin"] == str((suite_dir / "tasks" / name).resolve())
    summary = (suite_dir / "suite_summary.md").read_text()
    assert "| compression-narrowband | RVC-Compression/NarrowBand | not scored: not scored: generate-only or timing " \
           "run" in summary
    submission = json.loads((suite_dir / "submission.json").read_text())
    assert submission["tasks"]["compression-narrowband"]["status"] == "partial"
    assert "generate-only" in submission["tasks"]["compression-narrowband"]["error"]
    assert submission["tasks"]["background"]["status"] == "generated"
    assert cli(["status", str(suite_dir)]) == 0
    status = capsys.readouterr().out
    assert "suite    core-v1 generated" in status and "background-clean           generated 10/10 generated" in status
    assert "compression-narrowband     not scored: generate-only" in status


@pytest.mark.slow
@pytest.mark.timeout(2400)  # scores 20 pairs on CPU: a minute on a quiet machine
def test_anchor_and_group_by_tasks_scored_with_the_suite_protocol(core_generated, tmp_path, capsys):
    """Scoring the generated background/background-clean pair (evaluate_only): the suite's metrics (sim, speechmos
    via the tiny UTMOS stand-in, wer, mcd), its normalisation and bootstrap; the anchor changes and the noise
    breakdown; submission.json read by rvcbench's compare."""
    from rvcbench.benchmark.comparison import compare_submissions

    sha = write_tiny_utmos(tmp_path / "utmos")
    result, scored = suite_run(
        tmp_path, "suite/core_v1", "http://127.0.0.1:9", f"suite.name={core_generated['folder']}",
        f"dataset.root_path={core_generated['data']}", "suite.tasks=[background]", "+vc.evaluate_only=true",
        f"+vc.evaluation.generated_audio_dir={core_generated['dir']}", *OFFLINE_SCORERS,
        f"evaluation.utmos.local_dir={tmp_path / 'utmos'}", f"evaluation.utmos.sha256={sha}",
        "evaluation.utmos.allow_hub=false", "suite.model=stand-in")
    assert result.status == "complete", (scored / "suite_summary.md").read_text()
    scoring = json.loads((scored / "tasks" / "background" / "scoring_manifest.json").read_text())
    assert scoring["task_evaluation"]["metrics"] == ["sim", "mos", "wer", "mcd"]
    assert scoring["task_evaluation"]["wer_normalisation"] == "ascii_punctuation_removed_v2"
    assert scoring["source_run"]["run_dir"] == str(core_generated["dir"] / "tasks" / "background")
    results = json.loads((scored / "suite_results.json").read_text())
    background = next(t for t in results["tasks"] if t["task"] == "background")
    changes = background["changes"]
    assert changes["anchor"] == "background-clean" and set(changes["paired"]) == {"sim", "speechmos", "wer", "mcd"}
    assert changes["paired"]["sim"]["n_pairs"] == 20 // EVERY and changes["paired"]["sim"]["delta_ci95"]
    assert set(changes["upstream_relative_change_percent"]) == {"sim", "speechmos", "wer", "mcd"}
    assert set(background["groups"]["noise"]) == set(background["group_means"]["noise"])
    summary = (scored / "suite_summary.md").read_text()
    assert "## Change against the anchor task" in summary and "## background by noise" in summary
    submission = json.loads((scored / "submission.json").read_text())
    other = tmp_path / "other"
    other.mkdir()
    (other / "submission.json").write_text(json.dumps({**submission, "model": "other"}))
    comparison = compare_submissions([scored, other])
    assert comparison["protocol_compatible"] and "| background | SIM ↑ |" in comparison["markdown"]
    assert submission["tasks"]["background"]["means"]["sim"] == pytest.approx(background["metrics"]["sim"]["mean"])


@pytest.mark.slow
@pytest.mark.timeout(2400)  # scores 2 x 12 pairs on CPU
def test_derived_task_scores_the_processed_clone_against_the_unprocessed_one(core_generated, tmp_path):
    """compression-narrowband scored from audioshift's generated clips (evaluate_only): each clip through the
    telephone band (ffmpeg, upstream's commands), scored against the clone it came from with the task's metrics
    (stoi added); a derived run like any task's, read by the suite results and submission.json."""
    import soundfile as sf

    sha = write_tiny_utmos(tmp_path / "utmos")
    result, scored = suite_run(
        tmp_path, "suite/core_v1", "http://127.0.0.1:9", f"suite.name={core_generated['folder']}",
        f"dataset.root_path={core_generated['data']}", "suite.tasks=[compression-narrowband]",
        "+vc.evaluate_only=true", f"+vc.evaluation.generated_audio_dir={core_generated['dir']}", *OFFLINE_SCORERS,
        f"evaluation.utmos.local_dir={tmp_path / 'utmos'}", f"evaluation.utmos.sha256={sha}",
        "evaluation.utmos.allow_hub=false", "suite.model=stand-in")
    assert result.status == "complete", (scored / "suite_summary.md").read_text()
    task = scored / "tasks" / "compression-narrowband"
    scoring = json.loads((task / "scoring_manifest.json").read_text())
    assert scoring["derived_task"]["derived_from"] == "audioshift"
    assert scoring["derived_task"]["transform"]["transform"]["kind"] == "narrowband"
    assert scoring["source_run"]["run_dir"] == "."  # the derived task's own run, made from audioshift's
    assert scoring["source_run"]["derived_from"]["run_dir"] == str(core_generated["dir"] / "tasks" / "audioshift")
    assert "stoi" in scoring["task_evaluation"]["metrics"]
    with open(task / "generation_sample_metrics.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    source = core_generated["dir"] / "tasks" / "audioshift" / "generated_audio"
    assert len(rows) == 24 // EVERY
    for row in rows:  # the target is the unprocessed clone; the scored clip its telephone-band copy
        assert Path(row["target_audio"]).is_relative_to(source)
        assert row["generated_audio"].startswith("generated_audio/")  # relative to the task's run
        assert sf.info(task / row["generated_audio"]).samplerate == 24000 and float(row["stoi"]) < 1.0
    results = json.loads((scored / "suite_results.json").read_text())
    narrowband = next(t for t in results["tasks"] if t["task"] == "compression-narrowband")
    audioshift = next(t for t in results["tasks"] if t["task"] == "audioshift")
    assert narrowband["status"] == "complete" and narrowband["metrics"]["stoi"]["n_valid"] == 24 // EVERY
    assert narrowband["metrics"]["sim"]["mean"] != audioshift["metrics"]["sim"]["mean"]
    submission = json.loads((scored / "submission.json").read_text())
    assert submission["tasks"]["compression-narrowband"]["status"] == "complete"
    assert set(submission["tasks"]["compression-narrowband"]["means"]) >= {"sim", "stoi", "mcd", "wer"}


@pytest.mark.slow
@pytest.mark.timeout(2400)  # generates and scores 8 pairs with faster-whisper base on CPU
def test_crosslingual_task_scores_each_row_with_its_languages_text_rule(tmp_path):
    """core-v1's crosslingual task (EN->ZH and ZH->EN rows) generated against the stand-in (which speaks Mandarin
    text in eSpeak NG's Mandarin voice) and scored in one suite command: the multilingual Whisper (faster-whisper
    base) decodes in each row's target language, WER follows rvcbench's text rule for that language (Chinese:
    Traditional->Simplified, jieba words) and the Chinese rows get CER.

    Every 3rd row of the task (8 of 24: 4 with a Chinese target, 4 with an English one, the task's rows being 12
    of each in that order): each property is per row or per language, so both directions still check it."""
    from clonebench.demo.suite_dataset import build_suite_standin
    from clonebench.standin import running_standin

    folder = build_suite_standin("core-v1", tmp_path / "standin", ["crosslingual"], every=3)
    sha = write_tiny_utmos(tmp_path / "utmos")
    with running_standin(max_lifetime=1800) as server:
        result, suite_dir = suite_run(
            tmp_path, "suite/core_v1", server.url, f"suite.name={folder}",
            f"dataset.root_path={tmp_path / 'standin' / 'dataset'}", "suite.tasks=[crosslingual]",
            "evaluation.whisper.backend=faster_whisper", "evaluation.whisper.model=base",
            "evaluation.whisper.allow_hub=false", "evaluation.ecapa.allow_hub=false",
            f"evaluation.utmos.local_dir={tmp_path / 'utmos'}", f"evaluation.utmos.sha256={sha}",
            "evaluation.utmos.allow_hub=false", "suite.model=stand-in")
    summary = (suite_dir / "suite_summary.md").read_text()
    assert result.status == "complete", summary
    with open(suite_dir / "tasks" / "crosslingual" / "generation_sample_metrics.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 8 and all(row["wer"] != "" for row in rows), rows[:2]
    chinese = [row for row in rows if row["language"].lower().startswith("zh")]
    english = [row for row in rows if row["language"].lower().startswith("en")]
    assert len(chinese) == len(english) == 4
    assert all(row["cer"] != "" for row in chinese)
    scoring = (suite_dir / "tasks" / "crosslingual" / "scoring_manifest.json").read_text()
    assert "OpenCC" in scoring and "jieba" in scoring  # the pinned converter and segmenter in the WER protocol
    english_wer = sum(float(row["wer"]) for row in english) / len(english)
    assert english_wer < 0.5, english_wer  # the English clones say their text
    submission = json.loads((suite_dir / "submission.json").read_text())
    assert submission["tasks"]["crosslingual"]["status"] == "complete"
