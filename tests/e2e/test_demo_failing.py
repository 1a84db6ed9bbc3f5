"""``scripts/demo.py --failing``: the demo against a stand-in that loops, stops short or returns the prompt for a
quarter of the pairs each (picked by a hash of the pair). Every pair the stand-in spoiled raises the flags of its
behaviour, every other pair raises none, and metrics.json / the printed table show the rate."""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys

from clonebench.demo.dataset import FAILING_BEHAVIOURS
from clonebench.standin.behaviours import parse_behaviours, pick
from tests.conftest import REPO
from tests.e2e.test_readme_commands import readme_command

README_COMMANDS = ("python scripts/demo.py --failing",)  # docs/failure-modes.md

FLAGS_OF = {"loop": {"looping", "overlong"}, "truncate": {"truncated"}, "prompt_copy": {"prompt_copy"}}


def test_failing_demo_shows_each_spoiled_pair_and_the_rate(tmp_path):
    command = readme_command(README_COMMANDS[0]).split()  # as printed, with results under tmp_path
    assert command[:2] == ["python", "scripts/demo.py"]
    result = subprocess.run([sys.executable, *command[1:], "--results", str(tmp_path)], cwd=REPO, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (run,) = sorted((tmp_path / "demo_failing").glob("2*-*"))
    data = tmp_path / "demo" / "data"
    pairs = json.loads((data / "metadata.json").read_text())["pairs"]
    fractions = parse_behaviours(FAILING_BEHAVIOURS)
    behaviour = {p["pair_id"]: pick(p["target_text"], hashlib.sha256((data / p["prompt_file_name"]).read_bytes())
                                    .hexdigest(), fractions) for p in pairs}
    assert set(behaviour.values()) >= {"loop", "truncate", "prompt_copy", None}  # the demo shows every kind
    with open(run / "generation_sample_metrics.csv", newline="") as handle:
        rows = {r["pair_id"]: r for r in csv.DictReader(handle)}
    for pair_id, kind in behaviour.items():
        flags = set(filter(None, rows[pair_id]["failures"].split(";")))
        if kind is None:
            assert flags == set(), (pair_id, rows[pair_id]["failure_detail"])
            assert float(rows[pair_id]["fail"]) == 0.0
        else:
            assert FLAGS_OF[kind] <= flags, (pair_id, kind, rows[pair_id]["failure_detail"])
            assert float(rows[pair_id]["fail"]) == 1.0
    spoiled = sum(1 for kind in behaviour.values() if kind is not None)
    metrics = json.loads((run / "metrics.json").read_text())
    modes = metrics["failure_modes"]
    assert modes["n"] == len(pairs) and modes["failed"] == spoiled
    assert metrics["metrics"]["fail"]["mean"] == spoiled / len(pairs)
    assert modes["flags"]["prompt_copy"]["count"] == sum(1 for k in behaviour.values() if k == "prompt_copy")
    low, high = modes["ci"]
    assert low < spoiled / len(pairs) < high
    assert "fail" in result.stdout and (run / "report" / "index.html").is_file()
