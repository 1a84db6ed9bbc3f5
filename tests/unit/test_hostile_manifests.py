"""Crafted manifests and configs are refused with errors naming the file, row, field or key (no traceback):
ids that cannot become file names, bad encodings, byte-order marks, non-finite numbers, empty selections."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from clonebench.core.config_reader import ConfigReader
from clonebench.core.errors import ConfigError, ManifestError
from clonebench.data.manifest import Selection, build_samples


def _pairs(data: Path) -> list[dict]:
    return json.loads((data / "metadata.json").read_text())["pairs"]


def _write_json(data: Path, pairs: list[dict], name: str = "crafted.json") -> Path:
    path = data / name
    path.write_text(json.dumps({"pairs": pairs}, ensure_ascii=False), encoding="utf-8")
    return path


def _csv_bytes(pairs: list[dict]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(pairs[0]))
    writer.writeheader()
    writer.writerows(pairs)
    return out.getvalue().encode("utf-8")


@pytest.mark.parametrize("field, value, said", [
    ("speaker_id", "s" * 300, "speaker_id"),
    ("speaker_id", "话" * 100, "speaker_id"),            # 100 characters, 300 bytes
    ("pair_id", "p" * 256, "pair_id"),
    ("speaker_id", "a/b", "speaker_id"),
    ("pair_id", "x\x00y", "pair_id"),
    ("speaker_id", "..", "speaker_id"),
    ("dataset_name", "d\\e", "dataset_name"),
], ids=["300-ascii", "100-cjk", "256-pair", "slash", "nul", "dotdot", "backslash"])
def test_ids_that_cannot_be_file_names_are_refused_naming_the_field(dataset, field, value, said):
    pairs = _pairs(dataset)
    pairs[3][field] = value
    with pytest.raises(ManifestError) as caught:
        build_samples(_write_json(dataset, pairs), dataset, Selection(None), 42)
    assert "row 3" in str(caught.value) and f"'{said}'" in str(caught.value)
    assert 3 in caught.value.bad_rows


def test_long_but_valid_ids_pass(dataset):
    pairs = _pairs(dataset)
    for pair in pairs:
        pair["speaker_id"] = "话" * 60 + pair["speaker_id"]  # 180+ bytes: under the limit
    samples = build_samples(_write_json(dataset, pairs), dataset, Selection(None), 42)
    assert len(samples) == 8


def test_a_300_char_speaker_id_is_refused_before_any_request(tmp_path, dataset, standin):
    from tests.conftest import generate_run

    pairs = _pairs(dataset)
    pairs[0]["speaker_id"] = "x" * 300
    _write_json(dataset, pairs, "metadata.json")
    with pytest.raises(ManifestError, match="speaker_id"):
        generate_run(tmp_path, dataset, standin.url, "adversary.reference_check=false")
    assert [r for r in standin.received if r["path"] == "/v1/tts"] == []


def test_non_utf8_json_and_csv_name_the_file_and_row(dataset):
    pairs = _pairs(dataset)
    raw = _csv_bytes(pairs)
    lines = raw.split(b"\n")
    lines[3] = lines[3].replace(b"EN", b"\xff\xfeEN", 1)  # row 2 (after the header and rows 0, 1)
    (dataset / "bad.csv").write_bytes(b"\n".join(lines))
    with pytest.raises(ManifestError, match=r"bad\.csv.*(row 2|line 4).*UTF-8"):
        build_samples(dataset / "bad.csv", dataset, Selection(None), 42)
    text = json.dumps({"pairs": pairs}, indent=1).encode()
    cut = text.index(b'"EN"', len(text) // 2)
    (dataset / "bad.json").write_bytes(text[:cut] + b'"\xc3\x28"' + text[cut + 4:])
    with pytest.raises(ManifestError, match=r"bad\.json.*line \d+.*UTF-8"):
        build_samples(dataset / "bad.json", dataset, Selection(None), 42)


def test_a_lone_surrogate_is_a_manifest_error(dataset):
    pairs = _pairs(dataset)
    text = json.dumps({"pairs": pairs}).replace('"target_text": "', '"target_text": "\\ud800', 1)
    (dataset / "surrogate.json").write_text(text, encoding="utf-8")
    with pytest.raises(ManifestError, match=r"row 0.*'target_text'.*(surrogate|Unicode)"):
        build_samples(dataset / "surrogate.json", dataset, Selection(None), 42)


def test_a_byte_order_mark_is_accepted_in_csv_and_json(dataset):
    pairs = _pairs(dataset)
    (dataset / "bom.csv").write_bytes(b"\xef\xbb\xbf" + _csv_bytes(pairs))
    assert len(build_samples(dataset / "bom.csv", dataset, Selection(None), 42)) == 8
    (dataset / "bom.json").write_bytes(b"\xef\xbb\xbf" + json.dumps({"pairs": pairs}).encode())
    assert len(build_samples(dataset / "bom.json", dataset, Selection(None), 42)) == 8


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused_for_every_float_key(value):
    cfg = OmegaConf.create({"a": {"x": value}})
    for kwargs in ({}, {"minimum": 0.0}, {"maximum": 10.0}, {"minimum": 0.0, "maximum": 1e9}, {"allow_none": True}):
        with pytest.raises(ConfigError, match=r"'a\.x'.*finite"):
            ConfigReader(cfg, "test").float("a.x", **kwargs)


@pytest.mark.parametrize("override", ["adversary.timeout=nan", "adversary.retry_max_delay=nan",
                                      "adversary.retry_initial_delay=inf", "adversary.temperature=nan",
                                      "evaluation.confidence=nan"])
def test_non_finite_overrides_are_refused_at_config_time(override):
    from clonebench.config.settings import read_settings
    from tests.conftest import compose

    cfg = compose("demo", ["dataset.manifest_filename=/nonexistent/m.json", override])
    with pytest.raises(ConfigError, match=override.split("=")[0].replace(".", r"\.")):
        read_settings(cfg, "test")


def test_empty_selection_advice_matches_the_cause(dataset):
    path = dataset / "metadata.json"
    with pytest.raises(ManifestError) as caught:  # variant is already null: the speaker is the cause
        build_samples(path, dataset, Selection(None, speaker_id="nobody"), 42)
    message = str(caught.value)
    assert "speaker_id" in message and "manifest_variant=null" not in message
    variant = _pairs(dataset)[0].get("manifest_variant")
    with pytest.raises(ManifestError) as caught:  # the variant is the cause
        build_samples(path, dataset, Selection("no_such_variant"), 42)
    assert "manifest_variant" in str(caught.value) and "speaker_id=" not in str(caught.value).split(";")[-1]
    assert repr(variant) in str(caught.value) or str(variant) in str(caught.value)
