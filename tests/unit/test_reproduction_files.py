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
        args += ["--tables", str(SHARED / inputs[0])]
    else:
        args += ["--reference", str(SHARED / inputs[0])]
    assert module.main(args) == 0
    assert json.loads(out.read_text()) == json.loads((REPO / committed).read_text()), \
        f"{committed} is stale: run python scripts/{name}.py"
