import hashlib
import os

from clonebench.core.hashing import HashCache, sha256_file, tree_sha256


def test_cache_reuses_unchanged_and_rehashes_changed(tmp_path, monkeypatch):
    big = tmp_path / "ckpt.bin"
    big.write_bytes(b"a" * 1000)
    cache = HashCache(tmp_path / "cache.sqlite")
    first = cache.sha256(big)
    assert first == hashlib.sha256(b"a" * 1000).hexdigest()
    calls = []
    monkeypatch.setattr("clonebench.core.hashing.sha256_file", lambda p: calls.append(p) or sha256_file(p))
    assert cache.sha256(big) == first and calls == []  # unchanged: not read again
    big.write_bytes(b"b" * 1000)  # same size, new mtime
    os.utime(big, ns=(1, 1))
    assert cache.sha256(big) == hashlib.sha256(b"b" * 1000).hexdigest() and len(calls) == 1
    cache.close()
    reopened = HashCache(tmp_path / "cache.sqlite")  # persists across processes
    assert reopened.sha256(big) == hashlib.sha256(b"b" * 1000).hexdigest() and len(calls) == 1


def test_tree_hash_sources_only_and_order(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "data.bin").write_bytes(b"\0" * 10)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]")
    cache = HashCache(None)
    sources = tree_sha256(tmp_path, cache, sources_only=True)
    everything = tree_sha256(tmp_path, cache, sources_only=False)
    assert sources.files == 1 and everything.files == 3
    (tmp_path / "pkg" / "data.bin").write_bytes(b"\1" * 10)
    assert tree_sha256(tmp_path, cache, sources_only=True).sha256 == sources.sha256
    (tmp_path / "pkg" / "a.py").write_text("x = 2\n")
    assert tree_sha256(tmp_path, cache, sources_only=True).sha256 != sources.sha256
