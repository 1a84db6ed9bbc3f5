"""Input audio validated once is not read again while unchanged; a changed file is read and checked again."""

from __future__ import annotations

import json
import os

import pytest

from clonebench.core.errors import ManifestError
from clonebench.data import manifest as manifest_module
from clonebench.data.audio_cache import AudioCheckCache
from clonebench.data.manifest import Selection, build_samples


def test_unchanged_files_are_not_read_again(dataset, tmp_path, monkeypatch):
    db = tmp_path / "cache" / "hashes.sqlite"
    manifest = dataset / "metadata.json"
    first = build_samples(manifest, dataset, Selection(), 42, checked=AudioCheckCache(db))
    assert db.is_file()
    reads = []
    original = manifest_module.verify_audio
    monkeypatch.setattr(manifest_module, "verify_audio", lambda *a, **k: reads.append(a) or original(*a, **k))
    again = build_samples(manifest, dataset, Selection(), 42, checked=AudioCheckCache(db))
    assert reads == [] and [s.prompt.sha256 for s in again] == [s.prompt.sha256 for s in first]
    target = dataset / json.loads(manifest.read_text())["pairs"][0]["target_file_name"]
    target.write_bytes(target.read_bytes()[:-2] + b"\x00\x01")
    os.utime(target, ns=(1, 1))
    with pytest.raises(ManifestError, match="the manifest says"):
        build_samples(manifest, dataset, Selection(), 42, checked=AudioCheckCache(db))
    assert len(reads) == 1


def test_a_refused_manifest_writes_no_cache(dataset, tmp_path):
    db = tmp_path / "cache" / "hashes.sqlite"
    path = dataset / "metadata.json"
    payload = json.loads(path.read_text())
    payload["pairs"][5]["target_text"] = ""
    path.write_text(json.dumps(payload))
    with pytest.raises(ManifestError):
        build_samples(path, dataset, Selection(), 42, checked=AudioCheckCache(db))
    assert not db.exists() and not db.parent.exists()
