"""docs/listening-tests.md: its five commands, run as printed, on a demo run, with three raters who
complete the MOS test in headless Chromium between `listening-test` and `listening-results`.

Mapping to local equivalents (nothing else in the commands changes): results/demo/<stamp>-<id> -> a run of the demo
dataset against the stand-in Fish server, generated and scored like `make demo`'s but with MCD only (the cheapest
real metric; the listening test and the human column need no other); results/listening/ -> <tmp>/listening/;
docs/listening.png -> <tmp>/listening.png; `ratings/*.json` -> the files the glob matches (Python's glob: the
commands run without a shell); `clonebench ARGS` -> `python -c "...main()" ARGS` with this worktree's src first on
PYTHONPATH."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.e2e.test_readme_commands import readme_command
from tests.listening_runs import generation_runs

MOS_TEST = "clonebench listening-test results/demo/<stamp>-<id> --kind mos"
MUSHRA_TEST = "clonebench listening-test results/demo/<stamp>-<id> --kind mushra"
SCREENSHOT = "python scripts/listening_screenshot.py"
RESULTS = "clonebench listening-results results/listening/demo-mos"
REPORT = "clonebench report results/demo/<stamp>-<id> --listening"
README_COMMANDS = (MOS_TEST, MUSHRA_TEST, SCREENSHOT, RESULTS, REPORT)
CLI = [sys.executable, "-c", "import sys; from clonebench.cli.main import main; sys.exit(main())"]


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory, demo_dataset):
    tmp = tmp_path_factory.mktemp("listening_e2e")
    scored = generation_runs(tmp, demo_dataset, names=("demo",), evaluate=True)["demo"]
    other = generation_runs(tmp, demo_dataset, names=("other",), first_seed=77)["other"]  # other audio
    return tmp, scored, other


def run(command: str, tmp, run_dir) -> subprocess.CompletedProcess:
    command = (command.replace("results/demo/<stamp>-<id>", str(run_dir)).replace("results/listening/", f"{tmp}/listening/")
               .replace("docs/listening.png", str(tmp / "listening.png")))
    args = []
    for arg in command.split():
        args += sorted(glob.glob(arg)) if "*" in arg else [arg]
    args = CLI + args[1:] if args[0] == "clonebench" else [sys.executable] + args[1:]
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO}"}
    done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done


@pytest.mark.slow
def test_readme_listening_test_commands_run_as_printed(demo_runs):
    import playwright.sync_api as playwright_api

    from clonebench.listening.ratings import load_key
    from clonebench.report.browser import launch
    from tests.listening_browser import complete, key_policy

    tmp, scored, _ = demo_runs
    made = run(readme_command(MOS_TEST), tmp, scored)
    mos = tmp / "listening" / "demo-mos"
    key = load_key(mos)
    assert f"listening test {key['test_id']} (mos): 8 items" in made.stdout
    run(readme_command(MUSHRA_TEST), tmp, scored)
    assert (tmp / "listening" / "demo-mushra" / "site" / "index.html").is_file()
    run(readme_command(SCREENSHOT), tmp, scored)
    assert (tmp / "listening.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    manager = playwright_api.sync_playwright().start()
    browser = launch(manager)
    try:  # three raters: the natural recordings above the demo's clips, the degraded checks at the bottom
        for rater, demo_score in (("ann", 3), ("ben", 3), ("cai", 2)):
            context = browser.new_context(accept_downloads=True)
            complete(context.new_page(), (mos / "site" / "index.html").as_uri(), rater,
                     key_policy(key, {"S1": demo_score, "natural": 5}), mos / "ratings")
            context.close()
    finally:
        browser.close()
        manager.stop()
    results = run(readme_command(RESULTS), tmp, scored).stdout
    assert "| demo | 2.67 |" in results and "| natural recordings | 5.00 |" in results
    assert "Raters: 3 given, 3 kept." in results
    report = run(readme_command(REPORT), tmp, scored).stdout
    assert "| MOS↑ | MOS (human)↑ |" in report and "2.667 [" in report and "(human, 3 raters)" in report
    assert "| natural recordings (listening test) |" in report
    assert f"MOS (human, 3 raters kept of 3): listening test {key['test_id']}, 8 items" in report


@pytest.mark.slow
def test_the_report_refuses_a_listening_test_of_other_runs(demo_runs):
    from clonebench.listening.ratings import load_key
    from tests.listening_sim import Population

    tmp, scored, other = demo_runs
    test = tmp / "listening" / "other-mos"
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO}"}
    made = subprocess.run(CLI + ["listening-test", str(other), "--kind", "mos", "--items", "2", "--output", str(test)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    key = load_key(test)
    (test / "ratings" / "r.json").write_text(json.dumps(Population(key, {"S1": 3, "natural": 4}, 1).rater("r")))
    assert subprocess.run(CLI + ["listening-results", str(test), str(test / "ratings" / "r.json")], env=env,
                          capture_output=True, timeout=300).returncode == 0
    refused = subprocess.run(CLI + ["report", str(scored), "--listening", str(test)], env=env, capture_output=True,
                             text=True, timeout=300)
    assert refused.returncode == 2 and "none of its systems (other) is a run of this report" in refused.stderr
