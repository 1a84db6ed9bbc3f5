"""An input WAV rewritten in place (same size, mtime and inode) is checked again, and the reference bytes of
every request are checked against the manifest's sha256 right before they are sent."""

from __future__ import annotations

import json
import os

import pytest

from clonebench.core.errors import ClonebenchError, ManifestError
from clonebench.core.records import RunStatus
from clonebench.data.audio_cache import AudioCheckCache
from clonebench.data.manifest import Selection, build_samples


def _rewrite_in_place(path, data: bytes) -> None:
    """New bytes of the same length, the same inode, and the old mtime put back (what `touch -r` allows)."""
    st = os.stat(path)
    assert len(data) == st.st_size
    with open(path, "r+b") as handle:
        handle.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)


def test_a_file_rewritten_with_the_same_size_mtime_and_inode_is_checked_again(dataset, tmp_path):
    db = tmp_path / "cache" / "hashes.sqlite"
    manifest = dataset / "metadata.json"
    build_samples(manifest, dataset, Selection(None), 42, checked=AudioCheckCache(db))
    prompt = dataset / json.loads(manifest.read_text())["pairs"][0]["prompt_file_name"]
    cache = AudioCheckCache(db)
    assert cache.known_valid(prompt) is not None
    _rewrite_in_place(prompt, os.urandom(prompt.stat().st_size))
    assert AudioCheckCache(db).known_valid(prompt) is None
    with pytest.raises(ManifestError, match="prompt_file_name"):
        build_samples(manifest, dataset, Selection(None), 42, checked=AudioCheckCache(db))


def test_reference_bytes_changed_after_validation_are_refused_before_sending(tmp_path, dataset, standin, monkeypatch):
    import clonebench.generate.phase as phase
    from tests.conftest import generate_run, journal

    real = phase.load_samples
    swapped = {}

    def load_then_swap(settings):
        samples = real(settings)
        victim = samples[5]
        swapped["sample_id"] = victim.sample_id
        _rewrite_in_place(victim.prompt.path, b"\x00" * victim.prompt.path.stat().st_size)  # junk, same stat
        return samples

    monkeypatch.setattr(phase, "load_samples", load_then_swap)
    with pytest.raises(ClonebenchError, match="changed since it was validated"):
        generate_run(tmp_path, dataset, standin.url, "adversary.reference_check=false", "adversary.concurrency=1")
    run_dir = tmp_path / "results" / "run"
    sent = [e for e in journal(run_dir) if e["event"] == "attempt_start"]
    assert swapped["sample_id"] not in {e["sample_id"] for e in sent}
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["status"] == RunStatus.FAILED.value and "changed since it was validated" in manifest["errors"][0]
