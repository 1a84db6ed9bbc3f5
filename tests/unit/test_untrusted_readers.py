"""Every reader of a user-given or run-stored file goes through core.untrusted: arbitrary bytes, JSON of the right
top-level shape with wrong types, and special files (a FIFO, a directory, a symlink leaving the folder) give a
result or a ClonebenchError subclass, never another exception or a hang, and nothing is written outside the
temporary folder (issue #28 items 1 and 4)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clonebench.core.errors import ClonebenchError
from clonebench.data.manifest import read_rows
from clonebench.generate.journal import (
    JOURNAL_NAME,
    MANIFEST_NAME,
    read_events,
    read_record,
)
from clonebench.generate.resume import resume_chain
from clonebench.runs.status import suite_status, summarise
from clonebench.suite.definition import load_suite
from clonebench.suite.record import SUITE_MANIFEST, suite_chain
from clonebench.suite.results import load_suite_results

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12)
HYPOTHESIS = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
                      deadline=None)


def _listing(folder: Path) -> set[str]:
    return {str(p) for p in folder.rglob("*")}


def _outcome(call, timeout: float = 10.0):
    """The call's result or ClonebenchError, in a thread so that a hang fails instead of hanging the suite."""
    box: dict = {}

    def run():
        try:
            box["result"] = call()
        except ClonebenchError as exc:
            box["error"] = exc
        except BaseException as exc:  # noqa: BLE001 - reported below
            box["other"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "the reader hung"
    if "other" in box:
        raise AssertionError(f"not a ClonebenchError: {box['other']!r}") from box["other"]
    return box.get("error", box.get("result"))


def _consume(result):
    return list(result) if hasattr(result, "__next__") else result


# Each reader: (file name inside the folder, call(folder) -> result).
READERS = {
    "manifest_json": ("pairs.json", lambda d: read_rows(d / "pairs.json")),
    "manifest_csv": ("pairs.csv", lambda d: read_rows(d / "pairs.csv")),
    "journal": (JOURNAL_NAME, lambda d: _consume(read_events(d / JOURNAL_NAME))),
    "run_record": (MANIFEST_NAME, lambda d: read_record(d / MANIFEST_NAME)),
    "resume_chain": (MANIFEST_NAME, lambda d: resume_chain(d)),
    "status": (MANIFEST_NAME, lambda d: summarise(d)),
    "suite_status": (SUITE_MANIFEST, lambda d: suite_status(d)),
    "suite_chain": (SUITE_MANIFEST, lambda d: suite_chain(d)),
    "suite_results": (SUITE_MANIFEST, lambda d: load_suite_results(d)),
    "suite_definition": ("suite.json", lambda d: load_suite(str(d / "suite.json"))),
}
# The top-level shape each reader's file has (its values are then drawn with wrong types).
SHAPES = {
    "manifest_json": st.lists(st.dictionaries(st.sampled_from(["pair_id", "speaker_id", "prompt_file_name",
                                                               "target_text", "source_row", "split"]),
                                              json_values, max_size=6), max_size=3),
    "journal": st.lists(st.fixed_dictionaries({"event": st.sampled_from(["sample", "attempt_end", "attempt_start",
                                                                           "fingerprints", "run_end", "x"])},
                                              optional={k: json_values for k in (
                                                  "sample_id", "pair_id", "speaker_id", "status", "audio_path",
                                                  "purpose", "outcome", "input", "generation", "generation_fields",
                                                  "attempts", "duration_s")}), max_size=4),
    "run": st.fixed_dictionaries({}, optional={k: json_values for k in (
        "config", "samples", "resume_origin", "fingerprints", "errors", "input_failures", "run_name", "status")}),
    "suite_record": st.fixed_dictionaries({}, optional={k: json_values for k in (
        "suite", "suite_source", "tasks", "resume_origin", "status", "errors")}),
    "suite_json": st.fixed_dictionaries({"tasks": st.lists(json_values, max_size=3)}, optional={k: json_values for k in (
        "suite", "version", "leaderboard", "label", "evaluation", "not_included")}),
}
SHAPE_OF = {"manifest_json": "manifest_json", "journal": "journal", "run_record": "run",
            "resume_chain": "run", "status": "run", "suite_status": "suite_record", "suite_chain": "suite_record",
            "suite_results": "suite_record", "suite_definition": "suite_json"}


def _check_in_fresh_folder(name: str, write) -> None:
    outer = Path(tempfile.mkdtemp(prefix="untrusted-"))
    try:
        folder = outer / "run"
        folder.mkdir()
        file_name, call = READERS[name]
        write(folder / file_name)
        before = _listing(outer.parent / outer.name)
        _outcome(lambda: call(folder))
        # nothing is written outside the temp folder (and nothing new appears beside it)
        assert all(p.startswith(str(outer)) for p in _listing(outer)), before
    finally:
        shutil.rmtree(outer, ignore_errors=True)


@pytest.mark.parametrize("name", sorted(READERS))
@HYPOTHESIS
@given(data=st.binary(max_size=200))
def test_arbitrary_bytes(name, data):
    _check_in_fresh_folder(name, lambda path: path.write_bytes(data))


@pytest.mark.parametrize("name", sorted(SHAPE_OF))
@HYPOTHESIS
@given(data=st.data())
def test_right_shape_wrong_types(name, data):
    value = data.draw(SHAPES[SHAPE_OF[name]])
    if name == "journal":
        text = "".join(json.dumps(v) + "\n" for v in value)
    else:
        text = json.dumps(value)
    _check_in_fresh_folder(name, lambda path: path.write_text(text, encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(READERS))
@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink_out"])
def test_special_files(name, kind, tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"secret": 1}), encoding="utf-8")
    file_name, call = READERS[name]
    path = folder / file_name
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to(outside)
    before = _listing(tmp_path)
    _outcome(lambda: call(folder))
    assert _listing(tmp_path) <= before | {str(p) for p in folder.rglob("*")}
    assert outside.read_text(encoding="utf-8") == json.dumps({"secret": 1})


def test_a_fifo_as_a_run_record_is_refused_naming_the_file(tmp_path):
    os.mkfifo(tmp_path / MANIFEST_NAME)
    error = _outcome(lambda: read_record(tmp_path / MANIFEST_NAME))
    assert isinstance(error, ClonebenchError) and "FIFO" in str(error) and MANIFEST_NAME in str(error)
