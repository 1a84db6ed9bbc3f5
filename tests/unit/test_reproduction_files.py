"""The committed reproduction/ files are exactly what the scripts derive from the shared reference files."""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.conftest import REPO

SHARED = REPO.parent / "shared" / "reference"
SCRIPTS = {
    "build_reproduction_subset": (["libritts16_v1_pairs.json"], "reproduction/subsets/libritts16_v1/metadata.json"),
    "build_historical_baseline": (["fish_s2_historical_libritts16.json"], "reproduction/historical/fish_s2_http_libritts16.json"),
    "build_paper_tables": (["paper_tables.json"], "reproduction/paper/published_tables.json"),
}


def _script(name):
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_committed_file_is_up_to_date(name, tmp_path):
    inputs, committed = SCRIPTS[name]
    if not all((SHARED / i).is_file() for i in inputs):
        pytest.skip(f"the shared reference files are not next to this checkout ({SHARED})")
    module = _script(name)
    out = tmp_path / "out.json"
    args = ["--output", str(out)]
    if name == "build_historical_baseline":
        args += ["--scores", str(SHARED / inputs[0])]
    elif name == "build_paper_tables":
        args += ["--tables", str(SHARED / inputs[0]), "--paper", "v2"]
    else:
        args += ["--reference", str(SHARED / inputs[0])]
    assert module.main(args) == 0
    assert json.loads(out.read_text()) == json.loads((REPO / committed).read_text()), \
        f"{committed} is stale: run python scripts/{name}.py"


def test_paper_v3_tables_are_derived_from_the_wheel_readme(tmp_path):
    """v3: 22 models from the rvcbench 2.2.1 README (its METADATA), Fish Audio S2 among them, marked as appendix."""
    out = tmp_path / "v3.json"
    assert _script("build_paper_tables").main(["--paper", "v3", "--output-v3", str(out)]) == 0
    derived = json.loads(out.read_text())
    assert derived == json.loads((REPO / "reproduction/paper/published_tables_v3.json").read_text()), \
        "reproduction/paper/published_tables_v3.json is stale: run python scripts/build_paper_tables.py --paper v3"
    results = derived["tables"]["results"]
    assert derived["paper_version"] == "v3" and len(results["rows"]) == 22
    assert results["metrics"] == ["SIM", "MOS", "WER", "MCD", "VCTK SIM", "Chinese SIM", "Cross-lingual SIM"]
    fish = next(r for r in results["rows"] if r["model"] == "Fish Audio S2")
    assert fish["appendix"] and (fish["SIM"], fish["WER"], fish["Chinese SIM"]) == (0.54, 0.04, 0.66)
    assert fish["bold_in_source"] == ["WER"]
    protection = derived["tables"]["protection_SIM"]
    assert protection["metrics"] == ["Clean", "SafeSpeech", "SPEC", "Enkidu", "Gaussian", "POP"]
    assert len(protection["rows"]) == 22
