"""The evaluate phase's durable progress (evaluate/execution/progress.py) as status and report read it: still scoring (the
lock is held) vs interrupted (the lock is gone), preparing, failed, unreadable; a second scorer of one run is
refused. The real SIGKILL cases run in tests/integration/test_evaluate_integrity.py."""

from __future__ import annotations

import pytest

from clonebench.core.errors import ClonebenchError
from clonebench.evaluate.execution.progress import PROGRESS_NAME, ScoringProgress, read_progress, unfinished_reason


def test_status_tells_scoring_now_from_killed_and_names_each_group(tmp_path):
    progress = ScoringProgress(tmp_path, ["ecapa", "whisper"], tmp_path / "source")
    assert "still preparing to score" in unfinished_reason(read_progress(tmp_path))
    with pytest.raises(ClonebenchError, match="being scored by another clonebench process"):
        ScoringProgress(tmp_path, ["ecapa"], tmp_path / "source")
    progress.ready(5)
    progress.start("ecapa", "f" * 64, 5, 2)
    progress.scored("ecapa", 2)
    assert unfinished_reason(read_progress(tmp_path)) == (
        "its evaluate phase is still scoring: ecapa RUNNING 4/5 (2 cached, 2 scored); whisper waiting 0/5 "
        "(0 cached, 0 scored)")
    progress.close()  # as the kernel does when the process is killed
    assert "was interrupted while scoring (the process died): ecapa RUNNING 4/5" in \
        unfinished_reason(read_progress(tmp_path))


def test_a_finished_or_failed_evaluation_says_so(tmp_path):
    done = ScoringProgress(tmp_path / "done", ["mcd"], tmp_path)
    done.ready(1)
    done.finish("partial")
    assert unfinished_reason(read_progress(tmp_path / "done")) is None
    failed = ScoringProgress(tmp_path / "failed", ["mcd"], tmp_path)
    failed.fail("ClonebenchError: not the pairs")
    failed.close()
    assert unfinished_reason(read_progress(tmp_path / "failed")).startswith(
        "its evaluate phase failed (ClonebenchError: not the pairs): mcd waiting 0/?")


@pytest.mark.parametrize("content", [b"", b"{", b"[]", b'{"groups": 3}', b"\xff\xfe"])
def test_an_unreadable_progress_file_is_reported_not_raised(tmp_path, content):
    (tmp_path / PROGRESS_NAME).write_bytes(content)
    assert "cannot be read" in unfinished_reason(read_progress(tmp_path))


def test_report_refuses_a_run_killed_while_scoring(tmp_path):
    from clonebench.report.tables import load_run

    progress = ScoringProgress(tmp_path, ["whisper"], tmp_path)
    progress.ready(3)
    progress.start("whisper", "f" * 64, 3, 0)
    progress.close()
    with pytest.raises(ClonebenchError, match=r"interrupted while scoring .*whisper RUNNING 0/3"):
        load_run(tmp_path)


def test_report_and_compare_check_on_a_run_being_scored_say_wait_not_score_again(tmp_path, capsys):
    from clonebench.cli.main import main as cli
    from clonebench.report.tables import load_run

    progress = ScoringProgress(tmp_path / "run", ["whisper"], tmp_path)
    progress.ready(3)
    progress.start("whisper", "f" * 64, 3, 0)
    try:  # the lock is held: a process is scoring it now
        with pytest.raises(ClonebenchError, match=r"still scoring: whisper RUNNING 0/3 .*\. Wait for it to finish") as err:
            load_run(tmp_path / "run")
        assert "Score it again" not in str(err.value)
        assert cli(["compare-check", str(tmp_path / "run"), str(tmp_path / "run")]) != 0
        assert "Wait for it to finish" in capsys.readouterr().err
    finally:
        progress.close()
    with pytest.raises(ClonebenchError, match=r"interrupted while scoring .*\. Score it again"):
        load_run(tmp_path / "run")  # killed: scoring it again is the advice
