"""docs/score-folders.md, its rvcbench suite block: every command as printed, in order.

Local substitutions (nothing else in the commands changes): /data/RVCBench -> a synthetic dataset in the RVCBench
layout (eSpeak NG recordings, ``build_suite_standin`` with every 4th pair of onboarding-v1's libritts and vctk
tasks, to keep the test short), and ``--suite onboarding-v1`` / appended ``suite.name=`` -> that stand-in's suite
folder (the suite files with the selections rewritten to the synthetic files' hashes); the commands run in a fresh
folder; ``clonebench`` is this checkout's CLI, ``python`` this interpreter and ``run_vc.py`` this checkout's; the
``run_vc.py`` command gets the offline scorers appended (faster-whisper tiny.en and ECAPA from their wheels, the
scorers ``--config-name demo evaluation.whisper.model=tiny.en`` gives) and writes under the folder's default
``results/``, as printed, where ``clonebench score`` keeps the shared metric cache.
Checked: the prompt files, the two suite runs and their submission.json, rvcbench's comparison of them, and the
run_vc.py path scoring the same numbers as ``clonebench score`` for the same folder: the same scorers (fingerprints)
on the same audio, so every score is a hit of that cache.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from tests.conftest import OFFLINE_SCORERS, REPO
from tests.e2e.test_readme_commands import readme_command

PROMPTS = "clonebench prompts --suite onboarding-v1"
STANDIN = "python -m clonebench.standin --test-list prompts_onboarding/prompts.tsv --res-dir outputs_onboarding/standin"
NOCLONE = "python -m clonebench.standin --test-list prompts_onboarding/prompts.tsv --res-dir outputs_onboarding/noclone"
SCORE = "clonebench score --suite onboarding-v1"
COMPARE = "rvcbench compare scores_onboarding/"
RUN_VC = "python run_vc.py --config-name suite/onboarding_v1 'suite.tasks=[libritts,vctk]' +vc.evaluate_only=true"
README_COMMANDS = (PROMPTS, STANDIN, NOCLONE, SCORE, COMPARE, RUN_VC)
CLI = [sys.executable, "-c", "import sys; from clonebench.cli.main import main; sys.exit(main())"]


def _argv(prefix: str, folder, data) -> list[str]:
    command = readme_command(prefix).replace("/data/RVCBench", str(data))
    command = command.replace("--suite onboarding-v1", f"--suite {folder}")
    words = shlex.split(command)
    if words[0] == "clonebench":
        return CLI + words[1:]
    if words[0] == "rvcbench":
        return words
    argv = [sys.executable] + [str(REPO / w) if w == "run_vc.py" else w for w in words[1:]]
    if "run_vc.py" in command:
        argv += [f"suite.name={folder}", *OFFLINE_SCORERS]
    return argv


def _means(submission) -> dict:
    return {task: entry.get("means") for task, entry in json.loads(submission.read_text())["tasks"].items()}


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_suite_scoring_commands_run_as_printed(tmp_path):
    from clonebench.demo.suite_dataset import build_suite_standin

    folder = build_suite_standin("onboarding-v1", tmp_path / "standin", ["libritts", "vctk"], every=4)
    data, work = tmp_path / "standin" / "dataset", tmp_path / "work"
    results = work / "results"  # run_vc.py's default paths.results_dir, in the folder the commands run in
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO}", "HF_HUB_OFFLINE": "1"}
    for prefix in README_COMMANDS:
        done = subprocess.run(_argv(prefix, folder, data), cwd=work, env=env, capture_output=True, text=True,
                              timeout=1800)
        assert done.returncode == 0, f"{prefix}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    prompts = [json.loads(line) for line in (work / "prompts_onboarding" / "prompts.jsonl").read_text().splitlines()]
    assert [p["task"] for p in prompts] == ["libritts"] * 4 + ["vctk"] * 4
    assert json.loads((work / "prompts_onboarding" / "suite.json").read_text())["selected_tasks"] == ["libritts",
                                                                                                       "vctk"]
    scores = work / "scores_onboarding"
    for model in ("standin", "noclone"):
        submission = json.loads((scores / model / "submission.json").read_text())
        assert submission["status"] == "complete" and submission["model"] == model
        assert set(submission["tasks"]["vctk"]["means"]) == {"mcd", "wer", "sim"}
    assert (scores / "comparison" / "libritts" / "comparison.md").is_file()
    comparison = json.loads((scores / "rvcbench_compare" / "comparison.json").read_text())
    assert [m["model"] for m in comparison["models"]] == ["standin", "noclone"] and comparison["protocol_compatible"]
    standin, noclone = _means(scores / "standin" / "submission.json"), _means(scores / "noclone" / "submission.json")
    assert standin["libritts"]["sim"] > noclone["libritts"]["sim"]  # the clone is closer to its reference voice
    runs = list((results / "suite_onboarding_v1").glob("2*-*"))
    assert len(runs) == 1
    assert _means(runs[0] / "submission.json") == standin  # run_vc.py: the same numbers for the same folder
    for task in ("libritts", "vctk"):  # scored by the same scorers as clonebench score: all from the shared cache
        scoring = json.loads((runs[0] / "tasks" / task / "scoring_manifest.json").read_text())
        assert scoring["cache"]["misses"] == 0 and scoring["cache"]["hits"] > 0
    record = json.loads((runs[0] / "suite_manifest.json").read_text())
    assert record["generated_outside"] == str((work / "outputs_onboarding" / "standin").resolve())
    assert record["tasks"]["vctk"]["generation_source"].startswith("external folder")
