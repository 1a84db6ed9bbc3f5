import json

import pytest

from clonebench.core.errors import JournalError
from clonebench.generate.journal import Journal, final_outcomes, read_events


def test_append_and_read(tmp_path):
    journal = Journal(tmp_path / "j.jsonl")
    journal.append("sample", sample_id="a", pair_id="p", speaker_id="s", status="generated")
    journal.append("sample", sample_id="a", pair_id="p", speaker_id="s", status="generation_failed")
    journal.close()
    assert [e["status"] for e in read_events(tmp_path / "j.jsonl")] == ["generated", "generation_failed"]
    assert final_outcomes(read_events(tmp_path / "j.jsonl"))["a"].status.value == "generation_failed"


def test_torn_last_line_is_ignored_and_repaired(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps({"event": "run_start"}) + "\n" + '{"event": "sam')
    assert [e["event"] for e in read_events(path)] == ["run_start"]
    journal = Journal(path)  # reopening cuts the torn tail so the next event starts on its own line
    journal.append("run_end")
    journal.close()
    assert [e["event"] for e in read_events(path)] == ["run_start", "run_end"]


def test_torn_line_that_happens_to_parse_is_still_ignored(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps({"event": "a"}) + "\n" + json.dumps({"event": "b"}))
    assert [e["event"] for e in read_events(path)] == ["a"]


def test_corruption_before_the_last_line_is_an_error(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps({"event": "a"}) + "\nGARBAGE\n" + json.dumps({"event": "b"}) + "\n")
    with pytest.raises(JournalError, match="line 2 is corrupt"):
        list(read_events(path))


def test_a_write_cut_short_by_a_full_disk_leaves_no_torn_line(tmp_path, monkeypatch):
    import errno
    import os

    from clonebench.generate.journal import Journal, read_events

    journal = Journal(tmp_path / "sample_events.jsonl")
    journal.append("run_start", status="running")
    size = (tmp_path / "sample_events.jsonl").stat().st_size
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[: len(data) // 2])))  # short write
    with pytest.raises(OSError) as caught:
        journal.append("sample", sample_id="a" * 64, status="generated")
    assert caught.value.errno == errno.ENOSPC
    assert (tmp_path / "sample_events.jsonl").stat().st_size == size  # the half line was cut back
    monkeypatch.undo()
    journal.append("run_end", status="interrupted")
    assert [e["event"] for e in read_events(tmp_path / "sample_events.jsonl")] == ["run_start", "run_end"]
