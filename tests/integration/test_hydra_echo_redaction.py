"""No secret given on the command line reaches stdout, stderr or any file, whichever way Hydra or OmegaConf echoes
it: every path by which hydra-core 1.3.8 prints or writes an override or a config value, each run as a user runs
``run_vc.py`` (own process). Each case must still show its message (the secret is removed, not the error)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow
PASSWORD = "Pw9" + "zQ4vLk"
KEY = "sk-live-" + "7f3b9c2e1d"
URL = f"http://alice:{PASSWORD}@127.0.0.1:9/v1/tts"
OTHER = f"http://bob:{PASSWORD}x@127.0.0.1:10/v1/tts"
SECRETS = (PASSWORD, KEY, f"{PASSWORD}x")
DEMO = ["--config-name", "demo"]

# (name, command-line arguments, expected exit status, text that must still be shown)
CASES = [
    ("unknown key and the append hint", [f"adversary.endpont_url={URL}"], 1, "Could not override 'adversary.endpont_url'"),
    ("grammar error", [f"adversary.endpoint_url={URL}]"], 1, "Error parsing override"),
    ("grammar error, quoted", [f"adversary.endpoint_url='{URL}"], 1, "LexerNoViableAltException"),
    ("missing config group option", [f"adversary={URL}"], 1, "Could not find 'adversary/"),
    ("Hydra type error", [f"hydra.job.chdir={URL}"], 1, "is not a valid bool"),
    ("interpolation error", [f"adversary.endpoint_url={URL}/${{oops}}"], 1, "Interpolation key 'oops' not found"),
    ("interpolation error, full traceback", [f"adversary.endpoint_url={URL}/${{oops}}"], 1, "InterpolationKeyError"),
    ("clonebench type error", [f"adversary.concurrency={URL}"], 2, "is not an integer"),
    ("argparse unrecognized arguments", [f"adversary.endpoint_url={URL}", "--bogus", f"x={URL}"], 2,
     "unrecognized arguments"),
    ("--cfg job", ["--cfg", "job", f"adversary.endpoint_url={URL}"], 0, "endpoint_url: http://127.0.0.1:9/v1/tts"),
    ("--cfg job --resolve", ["--cfg", "job", "--resolve", f"adversary.endpoint_url={URL}"], 0, "endpoint_url:"),
    ("--cfg hydra", ["--cfg", "hydra", f"adversary.endpoint_url={URL}"], 0, "overrides:"),
    ("--cfg all", ["--cfg", "all", f"adversary.endpoint_url={URL}"], 0, "hydra:"),
    ("--info all", ["--info", "all", f"adversary.endpoint_url={URL}"], 0, "Defaults Tree"),
    ("--info config", ["--info", "config", f"adversary.endpoint_url={URL}"], 0, "Config"),
    ("--help", ["--help", f"adversary.endpoint_url={URL}"], 0, "Powered by Hydra"),
    # a sweep whose jobs all failed exits 1 with a line per shard (runs/sweep_outcome.py): no secret in those lines
    ("multirun listing, multirun.yaml, each job's .hydra/", ["-m", f"adversary.endpoint_url={URL},{OTHER}",
                                                             "adversary.concurrency=x"], 1, "Launching 2 jobs"),
    ("multirun with the joblib launcher", ["-m", "hydra/launcher=joblib", f"adversary.endpoint_url={URL},{OTHER}",
                                           "adversary.concurrency=x"], 1, "Launching jobs"),
    ("an API key as the value of an unknown key", [f"+adversary.api_key={KEY}"], 2, "are not used by clonebench"),
    ("an API key given instead of its variable's name", [f"adversary.api_key_env={KEY}", "adversary.concurrency=x"], 2,
     "is not an integer"),
    ("an API key in the job's environment", [f"+hydra.job.env_set.CB_KEY={KEY}", "adversary.concurrency=x"], 2,
     "is not an integer"),
]


def _run(case, root: Path):
    name, args, _, _ = case
    folder = root / re.sub(r"[^A-Za-z0-9]+", "_", name)
    folder.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    if "full traceback" in name:
        env["HYDRA_FULL_ERROR"] = "1"
    result = subprocess.run([sys.executable, str(REPO / "run_vc.py"), *DEMO, *args, f"paths.results_dir={folder / 'results'}",
                             f"hydra.run.dir={folder / 'run'}", f"hydra.sweep.dir={folder / 'sweep'}"],
                            cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    return folder, result


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("hydra_echo")
    with ThreadPoolExecutor(max_workers=4) as pool:  # independent processes: run them side by side
        return dict(zip([c[0] for c in CASES], pool.map(lambda c: _run(c, root), CASES)))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_no_secret_in_any_output_or_file(results, case):
    name, _, code, shown = case
    folder, result = results[name]
    output = result.stdout + result.stderr
    assert result.returncode == code, output[-3000:]
    assert shown in output, output[-3000:]
    for secret in SECRETS:
        assert secret not in output, f"{secret!r} shown:\n{output[-3000:]}"
        leaked = [p for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
        assert not leaked, leaked
    if name.startswith("multirun"):
        written = [p.name for p in folder.rglob("*.yaml")]
        assert "multirun.yaml" in written and written.count("overrides.yaml") == 2, written
