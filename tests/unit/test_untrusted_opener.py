"""core/untrusted.py, the one opener of untrusted files: special files, links leaving the folder, sizes, hostile
JSON; properties fuzzed with Hypothesis (fixed budget in CI: tests/conftest.py)."""

from __future__ import annotations

import json
import os
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clonebench.core.errors import ClonebenchError
from clonebench.core.untrusted import (MAX_INT_DIGITS, UntrustedFileError, parse_json, printable, read_bytes,
                                       read_json, read_text)

MARKER = "S3CRET-MARKER-7f3a"


def _in_thread(fn, timeout=10.0):
    """fn() in a thread; the test fails (instead of hanging) when it does not return in time."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "the reader blocked"
    return box


def test_regular_file_inside_is_read(tmp_path):
    (tmp_path / "a.json").write_text('{"k": [1, 2.5, "x"]}', encoding="utf-8")
    assert read_json(tmp_path / "a.json", max_bytes=100, within=tmp_path) == {"k": [1, 2.5, "x"]}


def test_symlink_staying_inside_is_allowed(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "real.txt").write_text("ok", encoding="utf-8")
    (tmp_path / "link.txt").symlink_to("sub/real.txt")
    assert read_text(tmp_path / "link.txt", max_bytes=10, within=tmp_path) == "ok"


@pytest.mark.parametrize("how", ["absolute", "relative_up", "chain"])
def test_symlink_leaving_the_folder_is_refused_without_echo(tmp_path, how):
    folder, outside = tmp_path / "given", tmp_path / "elsewhere"
    folder.mkdir()
    outside.mkdir()
    secret = outside / "secret.bin"
    secret.write_text(MARKER * 3, encoding="utf-8")
    if how == "absolute":
        (folder / "x.json").symlink_to(secret)
    elif how == "relative_up":
        (folder / "x.json").symlink_to("../elsewhere/secret.bin")
    else:
        (folder / "hop").symlink_to(outside)
        (folder / "x.json").symlink_to("hop/secret.bin")
    with pytest.raises(UntrustedFileError) as caught:
        read_json(folder / "x.json", max_bytes=1000, within=folder)
    assert caught.value.reason.startswith("outside the folder")
    assert MARKER not in str(caught.value)


def test_no_follow_refuses_any_symlink(tmp_path):
    (tmp_path / "real").write_text("{}", encoding="utf-8")
    (tmp_path / "link").symlink_to("real")
    with pytest.raises(UntrustedFileError, match="symbolic link"):
        read_bytes(tmp_path / "link", max_bytes=10, follow=False)


def test_fifo_directory_and_device_are_refused_promptly(tmp_path):
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "dir.json").mkdir()
    (tmp_path / "dev.json").symlink_to("/dev/zero")
    for name, within in (("pipe.json", tmp_path), ("dir.json", tmp_path), ("dev.json", None)):
        box = _in_thread(lambda: read_bytes(tmp_path / name, max_bytes=1 << 20, within=within))
        assert isinstance(box.get("error"), UntrustedFileError), name
        assert "not a regular file" in box["error"].reason


def test_size_is_bounded_before_reading(tmp_path):
    (tmp_path / "big").write_bytes(b"{" + b" " * 5000 + b"}")
    with pytest.raises(UntrustedFileError, match="too large"):
        read_bytes(tmp_path / "big", max_bytes=4096)


@pytest.mark.parametrize("text, reason", [
    ('{"a": ' + "7" * (MAX_INT_DIGITS + 1) + "}", "digits"),
    ("[-" + "1" * 6000 + "]", "digits"),
    ("[1e400]", "too large"),
    ("[-Infinity]", "not a JSON number"),
    ('{"a": NaN}', "not a JSON number"),
    ("[" * 3000 + "]" * 3000, "nested too deeply"),
    ('{"a": [' * 40 + "]}" * 40, "nested too deeply"),
    ('{"a": 1,}', "not JSON"),
])
def test_hostile_json_is_a_classified_error(text, reason):
    with pytest.raises(UntrustedFileError) as caught:
        parse_json(text, "ratings.json")
    assert reason in str(caught.value)


def test_non_utf8_is_named_without_echo(tmp_path):
    (tmp_path / "x.txt").write_bytes(MARKER.encode() + b"\xff\xfe")
    with pytest.raises(UntrustedFileError, match="not UTF-8") as caught:
        read_text(tmp_path / "x.txt", max_bytes=100)
    assert MARKER not in str(caught.value)


def test_printable_escapes_and_bounds():
    assert "\x1b" not in printable("a\x1b[31mb\x07")
    assert len(printable("n" * 10_000)) <= 300


@given(st.binary(max_size=2048))
def test_any_bytes_give_a_value_or_a_classified_error(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "f.json").write_bytes(data)
    try:
        read_json(folder / "f.json", max_bytes=4096, within=folder)
    except ClonebenchError:
        pass
    assert sorted(p.name for p in folder.iterdir()) == ["f.json"]


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30)


@given(_json_values)
def test_valid_json_round_trips_or_is_bounded(value):
    text = json.dumps(value)
    try:
        assert parse_json(text, "x.json") == json.loads(text)
    except UntrustedFileError as exc:  # only integers longer than the bound are refused
        assert "digits" in str(exc) or "nested" in str(exc)
