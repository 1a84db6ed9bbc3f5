"""The RVCBench suite commands of docs/suites.md (and the README's recipe), run as printed (each fetched with
readme_command), end to end: onboarding-v1 generated against the stand-in and scored, core-v1's chinese and french
tasks generated (French references are MP3) and resumed with no request, the onboarding suite scored again from its
audio, its summary, the paper v3 table with its row, and `rvcbench compare` reading the two submission.json files.

Local substitutions (nothing else in the commands changes): /data/RVCBench -> a synthetic dataset in the RVCBench
layout (eSpeak NG recordings, ``build_suite_standin`` with every 4th pair of onboarding-v1's three tasks and of
core-v1's chinese and french tasks: the same suites and tasks with a quarter of the pairs to generate and score, which
keeps the test short), and appended ``suite.name=<its suite folder>`` (the suite files with the selections rewritten
to the synthetic files' hashes); http://127.0.0.1:18011 -> the stand-in Fish server; the placeholders
results/suite_<name>/<stamp>-<id>, <fish-s2 run> and <rescored run> -> the suite directories the earlier commands
wrote; +vc.evaluation.device=cuda:0 -> cpu without a CUDA device; appended: paths.results_dir=<tmp>/results and the
offline scorers (faster-whisper tiny.en and ECAPA from their wheels, instead of openai-whisper medium).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import OFFLINE_SCORERS, REPO
from tests.e2e.test_readme_commands import readme_command

ONBOARDING = "python run_vc.py --config-name suite/onboarding_v1 dataset.root_path="
CORE = "python run_vc.py --config-name suite/core_v1 'suite.tasks=[chinese,french]'"
RESUME = "python run_vc.py --config-name suite/core_v1 vc.resume_from="
EVALUATE = "python run_vc.py --config-name suite/onboarding_v1 +vc.evaluate_only=true"
SUITE = "clonebench suite results/"
REPORT = "clonebench report results/suite_onboarding_v1/"
COMPARE = "rvcbench compare results/"
README_COMMANDS = (ONBOARDING, CORE, RESUME, EVALUATE, SUITE, REPORT, COMPARE)
ENV = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO}", "HF_HUB_OFFLINE": "1"}
CLI = [sys.executable, "-c", "import sys; from clonebench.cli.main import main; sys.exit(main())"]


def _run(argv: list[str], timeout: int = 1500) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, cwd=REPO, env=ENV, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def _received(url: str) -> int:
    return sum(1 for r in httpx.get(f"{url}/_standin/received", timeout=30).json() if r["path"] == "/v1/tts")


@pytest.fixture(scope="module")
def onboarding_quarter(tmp_path_factory) -> Path:
    from clonebench.demo.suite_dataset import build_suite_standin

    root = tmp_path_factory.mktemp("onboarding_quarter")
    build_suite_standin("onboarding-v1", root, every=4)
    return root


@pytest.fixture(scope="module")
def core_standin(tmp_path_factory) -> Path:
    from clonebench.demo.suite_dataset import build_suite_standin

    root = tmp_path_factory.mktemp("core_chinese_french")
    build_suite_standin("core-v1", root, ["chinese", "french"], every=4)
    return root


def _pairs(standin: Path, task: str = "") -> int:
    """The pairs the stand-in suite selects (of one task's metadata file, or of all): what a run must request."""
    folder = next((standin / "suite").iterdir())
    return sum(len(json.loads(f.read_text())) for f in folder.glob(f"{task}*.metadata.json"))


@pytest.mark.slow
@pytest.mark.timeout(3600)  # ~1.5 min on a quiet 2-core machine (scoring 13 pairs on CPU); more when it is shared
def test_readme_suite_commands_run_as_printed(onboarding_quarter, core_standin, tmp_path):
    import torch

    from clonebench.standin import running_standin

    results = tmp_path / "results"

    def local(prefix: str, standin: Path, url: str = "", **places: Path) -> list[str]:
        command = readme_command(prefix).replace("/data/RVCBench", str(standin / "dataset"))
        command = command.replace("http://127.0.0.1:18011", url)
        for placeholder, path in places.items():
            command = command.replace(placeholder, str(path))
        if not torch.cuda.is_available():
            command = command.replace("+vc.evaluation.device=cuda:0", "+vc.evaluation.device=cpu")
        argv = [sys.executable if a == "python" else a for a in shlex.split(command)]
        folder = next((standin / "suite").iterdir())
        return argv + [f"suite.name={folder}", f"paths.results_dir={results}"]

    def new_dir(name: str, before: set) -> Path:
        made = set((results / name).glob("2*-*")) - before
        assert len(made) == 1
        return made.pop()

    onboarding = _pairs(onboarding_quarter)
    core_pairs = _pairs(core_standin, "chinese") + _pairs(core_standin, "french")
    assert (onboarding, core_pairs) == (4 + 4 + 5, 6 + 6)  # libritts, vctk, robotcall; chinese, french
    with running_standin(max_lifetime=1800) as server:
        done = _run(local(ONBOARDING, onboarding_quarter, server.url) + list(OFFLINE_SCORERS))
        scored = new_dir("suite_onboarding_v1", set())
        assert f"suite complete: {scored}" in done.stdout and _received(server.url) == onboarding + 3
        core = local(CORE, core_standin, server.url)
        done = _run(core)
        generated = new_dir("suite_core_v1", set())
        sent = onboarding + 3 + core_pairs + 3
        assert f"suite generated: {generated}" in done.stdout and _received(server.url) == sent
        french = json.loads((generated / "tasks" / "french" / "run_manifest.json").read_text())
        assert french["status"] == "generated" and french["samples"][0]["prompt_file_name"].endswith(".mp3")
        done = _run(local(RESUME, core_standin, server.url, **{"results/suite_core_v1/<stamp>-<id>": generated}))
        assert _received(server.url) == sent  # resuming a finished suite sends nothing
        resumed = new_dir("suite_core_v1", {generated})
        for task in ("chinese", "french"):
            manifest = json.loads((resumed / "tasks" / task / "run_manifest.json").read_text())
            assert manifest["resumed_from"]["reused"] == _pairs(core_standin, task)
            assert manifest["status"] == "generated"

    before = set((results / "suite_onboarding_v1").glob("2*-*"))
    evaluate = local(EVALUATE, onboarding_quarter, **{"results/suite_onboarding_v1/<stamp>-<id>": scored})
    done = _run(evaluate + list(OFFLINE_SCORERS))
    rescored = new_dir("suite_onboarding_v1", before)
    first = json.loads((scored / "submission.json").read_text())
    again = json.loads((rescored / "submission.json").read_text())
    assert first["status"] == again["status"] == "complete" and (first["model"], again["model"]) == ("fish-s2",
                                                                                                  "fish-s2-rescored")
    assert {t: v["means"] for t, v in first["tasks"].items()} == {t: v["means"] for t, v in again["tasks"].items()}
    scoring = json.loads((rescored / "tasks" / "vctk" / "scoring_manifest.json").read_text())
    assert scoring["cache"]["misses"] == 0  # the same audio, the same scorers: every score from the cache

    suite = shlex.split(readme_command(SUITE).replace("results/suite_onboarding_v1/<stamp>-<id>", str(scored)))
    done = _run(CLI + suite[1:])
    assert "| libritts |" in done.stdout and "| robotcall |" in done.stdout and "status **complete**" in done.stdout
    report = shlex.split(readme_command(REPORT).replace("results/suite_onboarding_v1/<stamp>-<id>", str(scored)))
    done = _run(CLI + report[1:])
    row = next(line for line in done.stdout.splitlines() if line.startswith("| fish-s2 [onboarding-v1] |"))
    assert row.count("(n=4/4)") == 4  # SIM, WER, MCD from libritts, VCTK SIM from vctk (no MOS in onboarding)
    assert done.stdout.count(" (published) |") == 22
    compare = readme_command(COMPARE).replace("results/suite_onboarding_v1/<fish-s2 run>", str(scored))
    compare = compare.replace("results/suite_onboarding_v1/<rescored run>", str(rescored))
    compare = compare.replace("results/compare", str(tmp_path / "compare"))
    done = _run(shlex.split(compare), timeout=300)
    comparison = json.loads((tmp_path / "compare" / "comparison.json").read_text())
    assert [m["model"] for m in comparison["models"]] == ["fish-s2", "fish-s2-rescored"]
    assert comparison["protocol_compatible"] is True and "| libritts | SIM ↑ |" in (tmp_path / "compare" /
                                                                                  "comparison.md").read_text()
