"""``scripts/demo.py --failing``: the demo against a stand-in that loops, stops short or returns the prompt for a
quarter of the pairs each (picked by a hash of the pair). Every pair the stand-in spoiled raises the flags of its
behaviour, every other pair raises none, and metrics.json / the printed table show the rate. The same run scored
again through the Python API (``clonebench.metrics``) with the run's sample ids gives every value of its CSV:
on these clips Whisper falls back to sampled decoding, seeded from the sample id."""

from __future__ import annotations

import csv
import hashlib
import json
import math
import subprocess
import sys

import pytest

from clonebench.demo.dataset import FAILING_BEHAVIOURS
from clonebench.standin.behaviours import parse_behaviours, pick
from tests.conftest import REPO
from tests.e2e.test_readme_commands import readme_command

README_COMMANDS = ("python scripts/demo.py --failing",)  # docs/failure-modes.md

FLAGS_OF = {"loop": {"looping", "overlong"}, "truncate": {"truncated"}, "prompt_copy": {"prompt_copy"}}


@pytest.fixture(scope="module")
def failing(tmp_path_factory):
    """(the printed output, the run folder, the demo data folder) of the command as printed."""
    tmp_path = tmp_path_factory.mktemp("demo_failing")
    command = readme_command(README_COMMANDS[0]).split()  # as printed, with results under tmp_path
    assert command[:2] == ["python", "scripts/demo.py"]
    result = subprocess.run([sys.executable, *command[1:], "--results", str(tmp_path)], cwd=REPO, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (run,) = sorted((tmp_path / "demo_failing").glob("2*-*"))
    return result, run, tmp_path / "demo" / "data"


def test_failing_demo_shows_each_spoiled_pair_and_the_rate(failing):
    result, run, data = failing
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


def _same(stored: str, value) -> bool:
    """A CSV cell equals the API's value: numbers exactly (the CSV holds repr-exact floats), text as written."""
    if value is None or value == "":
        return stored == ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return stored != "" and (float(stored) == float(value) or (math.isnan(float(stored)) and math.isnan(value)))
    return stored == str(value)


def test_the_python_api_gives_every_value_of_the_failing_run(failing):
    """Every metric and measurement of every pair, from the Evaluator given each pair's sample id (``pair=`` for
    one, the CSV's ``sample_id`` for the rest) and prompt, equals the run's CSV. Without the run's ids the sampled
    fallback decoding of three of these clips gives other transcripts (WER 1.0 for the run's 0.556 on
    demo-1004-000001): the reason the API takes them."""
    from clonebench.evaluate.protocols.validity import RECORD_VALUES
    from clonebench.metrics import Evaluator

    _, run, data = failing
    with open(run / "generation_sample_metrics.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    pairs = {p["pair_id"]: p for p in json.loads((data / "metadata.json").read_text())["pairs"]}
    metrics = json.loads((run / "metrics.json").read_text())["metrics"]
    assert set(metrics) == {"sim", "sva", "wer", "mcd", "dnsmos", "fail"}
    requests = []
    for k, row in enumerate(rows):
        pair = pairs[row["pair_id"]]
        requests.append({"generated": str(run / row["generated_audio"]), "reference": row["target_audio"],
                         "text": row["target_text"], "language": row["language"],
                         "prompt": str(data / pair["prompt_file_name"]), "prompt_text": pair["prompt_text"],
                         "prompt_language": pair["prompt_language"],
                         **({"pair": pair} if k == 0 else {"sample_id": row["sample_id"]})})
    with Evaluator(list(metrics), config_name="demo") as evaluator:
        got = evaluator.score_many(requests, details=True)
    compared = {name for group in RECORD_VALUES.values() for name in group} & set(rows[0]) | {"failures"}
    assert {"wer", "hypothesis", "mcd", "dnsmos_p808", "fm_prompt_corr", "failures"} <= compared
    differences = [(row["pair_id"], name, row[name], result.get(name)) for row, result in zip(rows, got)
                   for name in sorted(compared) if not _same(row[name], result.get(name))]
    assert differences == []
    assert all(result["errors"] == [] for result in got)
