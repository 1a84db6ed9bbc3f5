"""docs/listening-tests.md's "Try the results without raters": a listening test of a demo run, simulated ratings from
the scripted raters, and ``listening-results``, exactly as printed in a scratch repository root
(tests/docs_workspace.py). The demo run the page starts from (``make demo``'s) is made here by scripts/demo.py
with generation only: a listening test needs the audio, not its scores."""

from __future__ import annotations

import json
import re

from tests.docs_workspace import Workspace

BUILD = "clonebench listening-test results/demo/<stamp>-<id> --output results/listening/simulated"
SIMULATE = "python scripts/simulate_ratings.py results/listening/simulated"
RESULTS = "clonebench listening-results results/listening/simulated"
README_COMMANDS = (BUILD, SIMULATE, RESULTS)


def test_simulated_raters_then_results_as_printed(tmp_path):
    space = Workspace(tmp_path / "repo")
    made = space.run("python scripts/demo.py +vc.generate_only=true")
    assert made.returncode == 0, made.stderr[-3000:]
    outputs = space.run_printed(README_COMMANDS)
    ratings = sorted((tmp_path / "repo" / "results" / "listening" / "simulated" / "ratings").glob("*.json"))
    assert [p.name for p in ratings] == ["simulated-1.json", "simulated-2.json", "simulated-3.json"]
    assert all(json.loads(p.read_text())["ratings"]["user_agent"] == "simulated" for p in ratings)
    assert outputs[1].startswith("SIMULATED ratings (scripted raters, not people)")
    results = outputs[2]
    assert "Raters: 3 given, 3 kept." in results
    demo = re.search(r"^\| demo \| (\d\.\d\d) \| \[(\d\.\d\d), (\d\.\d\d)\]", results, re.M)
    natural = re.search(r"^\| natural recordings \| (\d\.\d\d) \|", results, re.M)
    assert demo and natural, results
    assert float(demo.group(2)) <= 3.5 <= float(demo.group(3))  # the interval covers the true score it was given
    assert float(natural.group(1)) > float(demo.group(1))
