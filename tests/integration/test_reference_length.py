"""A reference longer than adversary.max_reference_seconds is refused at
validation, naming the pair and the limit, before any request is sent."""

from __future__ import annotations

import pytest

from clonebench.core.errors import ManifestError
from tests.conftest import generate_run, load_manifest


def test_a_too_long_reference_is_refused_before_any_request(tmp_path, dataset, standin):
    with pytest.raises(ManifestError, match=r"adversary.max_reference_seconds=0.5") as info:
        generate_run(tmp_path, dataset, standin.url, "adversary.max_reference_seconds=0.5")
    assert "pair_id" in str(info.value) and "reference of" in str(info.value)
    assert not [r for r in standin.received if r["path"] == "/v1/tts"]  # nothing was sent, not even the gate
    manifest = load_manifest(tmp_path / "results" / "run")
    assert manifest["status"] == "failed" and len(manifest["input_failures"]) == 8


def test_references_within_the_limit_pass(tmp_path, dataset, standin):
    status, _ = generate_run(tmp_path, dataset, standin.url, "adversary.max_reference_seconds=30",
                             "adversary.max_samples=1", "adversary.reference_check=false")
    assert status.value == "generated"


def test_no_limit_checks_nothing(dataset):
    from clonebench.data.manifest import Selection, build_samples
    from clonebench.data.reference_length import check_reference_lengths, reference_seconds

    samples = build_samples(dataset / "metadata.json", dataset, Selection(None, None, None), 42)
    longest = max(reference_seconds(s) for s in samples)
    check_reference_lengths(samples, None, "m.json")
    check_reference_lengths(samples, longest, "m.json")  # at the limit: fine
    with pytest.raises(ManifestError, match=r"longer than adversary.max_reference_seconds") as info:
        check_reference_lengths(samples, longest - 0.01, "m.json")
    assert len(info.value.bad_rows) >= 1 and "m.json row" in str(info.value)
