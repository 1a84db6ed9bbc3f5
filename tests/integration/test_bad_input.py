"""Bad input is a clear error before any request, naming the row and file, and nothing lands outside the run dir."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf

from clonebench.core.errors import ManifestError
from tests.conftest import REPO, files_under, generate_run, journal, load_manifest


def _edit(data, fn):
    path = data / "metadata.json"
    payload = json.loads(path.read_text())
    fn(payload["pairs"], data)
    path.write_text(json.dumps(payload))


def _nan_wav(rows, data):
    samples = np.zeros(2400, dtype=np.float32)
    samples[10] = np.inf
    out = io.BytesIO()
    sf.write(out, samples, 24000, subtype="FLOAT", format="WAV")
    target = data / rows[1]["target_file_name"]
    target.write_bytes(out.getvalue())
    rows[1]["target_sha256"] = None


def _unreadable(rows, data):
    (data / rows[2]["prompt_file_name"]).write_bytes(b"RIFF\x10\x00\x00\x00WAVEjunkjunk")
    rows[2]["prompt_sha256"] = None


CASES = {
    "escape": (lambda rows, d: rows[0].update(prompt_file_name="../../etc/passwd"),
               r"row 0 \(pair_id 'demo-1001-000000'\): prompt_file_name '../../etc/passwd' resolves to .* outside the dataset root"),
    "absolute": (lambda rows, d: rows[0].update(target_file_name="/etc/hostname"),
                 r"row 0 .*target_file_name '/etc/hostname' .*outside the dataset root"),
    "missing": (lambda rows, d: rows[3].update(target_file_name="audios/1002/nope.wav"),
                r"row 3 .*target_file_name 'audios/1002/nope.wav' not found at .*nope.wav \(check dataset.root_path\)"),
    "hash": (lambda rows, d: rows[4].update(prompt_sha256="0" * 64),
             r"row 4 .*prompt_file_name .*1003_000_prompt.wav has sha256 [0-9a-f]{64}, the manifest says 0{64}"),
    "empty_transcript": (lambda rows, d: rows[5].update(target_text="   "),
                         r"row 5 .*empty transcript 'target_text'"),
    "duplicate": (lambda rows, d: rows.append(dict(rows[0])),
                  r"row 8 .*duplicate sample id .* as row 0"),
    "non_finite": (_nan_wav, r"row 1 .*target_file_name .*1001_001_target.wav is not usable audio: 1 sample\(s\) are NaN or infinite"),
    "unreadable": (_unreadable, r"row 2 .*prompt_file_name .*1002_000_prompt.wav is not usable audio: WAV has no complete data chunk"),
    "missing_field": (lambda rows, d: rows[6].pop("source_index"), r"row 6 .*missing field 'source_index'"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_fails_before_any_request(tmp_path, dataset, standin, case):
    change, message = CASES[case]
    _edit(dataset, change)
    before = files_under(tmp_path)
    with pytest.raises(ManifestError, match=message) as info:
        generate_run(tmp_path, dataset, standin.url)
    assert "metadata.json" in str(info.value)
    assert standin.received == []  # not even the readiness probe
    run_dir = tmp_path / "results" / "run"
    new = files_under(tmp_path) - before
    assert new and all(run_dir in p.parents for p in new), f"written outside the run dir: {new}"
    manifest = load_manifest(run_dir)
    assert manifest["status"] == "failed" and manifest["input_failures"]
    assert any(e["event"] == "input" and e["status"] == "input_failed" for e in journal(run_dir))


def test_every_problem_is_reported_at_once(tmp_path, dataset, standin):
    def two(rows, d):
        rows[0]["target_text"] = ""
        rows[7]["prompt_sha256"] = "f" * 64
    _edit(dataset, two)
    with pytest.raises(ManifestError) as info:
        generate_run(tmp_path, dataset, standin.url)
    assert len(info.value.problems) == 2 and set(info.value.bad_rows) == {0, 7}


def test_bad_input_through_run_vc_writes_only_the_run_dir(tmp_path, dataset):
    """The Hydra entry point: exit status 2, the message on stderr, files only in results/<run>/<stamp>-<id>/."""
    _edit(dataset, CASES["hash"][0])
    before = files_under(tmp_path)
    result = subprocess.run(
        [sys.executable, str(REPO / "run_vc.py"), "--config-name", "demo", f"paths.results_dir={tmp_path / 'results'}",
         f"dataset.manifest_filename={dataset / 'metadata.json'}", f"dataset.root_path={dataset}",
         "adversary.endpoint_url=http://127.0.0.1:9/v1/tts", "+vc.generate_only=true"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "the manifest says 000000" in result.stderr
    new = files_under(tmp_path) - before
    run_dirs = {p.relative_to(tmp_path / "results" / "demo").parts[0] for p in new}
    assert len(run_dirs) == 1, new
    assert all(str(p).startswith(str(tmp_path / "results" / "demo")) for p in new)
    assert {p.name for p in new} >= {"run_manifest.json", "sample_events.jsonl", "run_vc.log", "config.yaml"}
