"""A disk that fills up mid-run: a clear error, the run marked ``interrupted`` with the cause, resumable once
space is back. The full disk is simulated at the system-call layer every run-directory write goes through
(``os.write``): writes under the results folder succeed until the free space runs out (the last one short,
as a real file system does), and removing a file gives its bytes back."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from clonebench.core.errors import ClonebenchError
from clonebench.core.records import RunStatus
from tests.conftest import generate_run, journal, load_manifest

NO_GATE = "adversary.reference_check=false"


class FullDisk:
    def __init__(self, root: Path, free: int):
        self.root, self.free, self.by_path = str(root), free, {}
        self.real_write, self.real_unlink = os.write, os.unlink
        self.refused = 0

    def _path(self, fd: int) -> str | None:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None
        return target if target.startswith(self.root) else None

    def write(self, fd, data):
        path = self._path(fd)
        if path is None:
            return self.real_write(fd, data)
        size = len(data)
        if self.free <= 0:
            self.refused += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written = self.real_write(fd, bytes(data[:min(size, self.free)]))
        self.free -= written
        self.by_path[path] = self.by_path.get(path, 0) + written
        return written

    def unlink(self, path, *args, **kwargs):
        self.real_unlink(path, *args, **kwargs)
        self.free += self.by_path.pop(os.path.abspath(os.fspath(path)), 0)


def test_disk_full_mid_run_interrupts_with_the_cause_and_resumes(tmp_path, dataset, standin, monkeypatch):
    # first, how much a finished run writes, to leave room for about three of its eight WAVs
    status, probe = generate_run(tmp_path, dataset, standin.url, NO_GATE, run_dir=tmp_path / "probe" / "run")
    wav = max(p.stat().st_size for p in (probe / "generated_audio").rglob("*.wav"))
    disk = FullDisk(tmp_path / "results", free=3 * wav + 40_000)
    monkeypatch.setattr(os, "write", disk.write)
    monkeypatch.setattr(os, "unlink", disk.unlink)
    standin.received.clear()
    with pytest.raises(ClonebenchError, match="disk full") as caught:
        generate_run(tmp_path, dataset, standin.url, NO_GATE, "adversary.concurrency=1",
                     run_dir=tmp_path / "results" / "full")
    assert disk.refused >= 1
    full = tmp_path / "results" / "full"
    assert f"vc.resume_from={full}" in str(caught.value)
    manifest = load_manifest(full)
    assert manifest["status"] == RunStatus.INTERRUPTED.value and "disk full" in manifest["errors"][0]
    events = journal(full)  # still a journal of whole lines
    saved = {e["sample_id"] for e in events if e["event"] == "sample" and e["status"] == "generated"}
    assert 1 <= len(saved) < 8
    assert not list((full / "generated_audio").rglob(".*"))  # no temporary file left behind
    monkeypatch.undo()  # space is back
    sent_before = len([r for r in standin.received if r["path"] == "/v1/tts"])
    status, resumed = generate_run(tmp_path, dataset, standin.url, NO_GATE, f"vc.resume_from={full}",
                                   run_dir=tmp_path / "results" / "resumed")
    assert status == RunStatus.GENERATED
    assert load_manifest(resumed)["resumed_from"]["reused"] >= len(saved)
    assert not {e["sample_id"] for e in journal(resumed) if e["event"] == "attempt_start"} & saved
    assert len([r for r in standin.received if r["path"] == "/v1/tts"]) - sent_before <= 8 - len(saved)
