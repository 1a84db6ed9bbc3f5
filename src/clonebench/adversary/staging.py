"""Server-side references: staging each reference in a folder the server can read.

GPT-SoVITS (``ref_audio_path``) and SGLang-Omni (``references[].audio_path`` / ``ref_audio``) take the reference as
a path on the *server's* disk, not as bytes in the request. The run therefore writes every reference it sends into
a shared folder before the request and names it there by its content:

- ``adversary.reference_share.local_dir``: the folder as this machine sees it (written here);
- ``adversary.reference_share.server_dir``: the same folder as the server sees it (default: ``local_dir``, the
  same machine); the request carries ``<server_dir>/<sha256>.<ext>``;
- ``adversary.reference_share.keep``: leave the staged files after the run (default: remove them).

Each file is written atomically (a temporary file in the same folder, then a rename), named by the sha256 of its
bytes, and never outside ``local_dir``. After the run only the files this run created are removed (a file that
was already there, e.g. from a kept run, stays). What was staged (hash and server path) is recorded in the run
manifest (``reference_share``). Without a configured share the run stops with a ConfigError before any request.

A run can be killed (SIGKILL) before it removes what it staged. So each file the run creates is first recorded
durably through ``note`` (the run's fsync'd journal: event ``reference_staged``), then written; a resume of the
chain hands the runs' recorded, never-removed files to ``adopt``, and removes them with its own at its release:
once the chain ends, the share holds what it held before the chain began.
"""

from __future__ import annotations

import glob
import hashlib
import os
import posixpath
import threading
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import Any

from clonebench.core.atomic import atomic_write_bytes
from clonebench.core.config_reader import ConfigReader
from clonebench.core.errors import ConfigError

EXTENSIONS = {"WAV": "wav", "MP3": "mp3", "FLAC": "flac", "OGG": "ogg"}


def how_to_share(protocol: str) -> str:
    return (f"{protocol} reads the reference from a path on the server's own disk, so the run must copy each "
            "reference into a folder the server can read. Same machine: adversary.reference_share.local_dir="
            "/some/folder (the server sees the same path). Server elsewhere (a cluster): a shared mount, "
            "adversary.reference_share.local_dir=<the mount here> adversary.reference_share.server_dir=<the same "
            "folder as the server sees it>")


def read_share(reader: ConfigReader) -> dict[str, Any]:
    """The ``adversary.reference_share`` keys. An unset share is refused by ``ReferenceShare.require`` (at the
    run's pair check, before any request), so that the config itself still composes and can be inspected."""
    local_dir = reader.path("adversary.reference_share.local_dir", None)
    server_dir = reader.str("adversary.reference_share.server_dir", None, allow_none=True)
    keep = reader.bool("adversary.reference_share.keep", False)
    if server_dir and not posixpath.isabs(server_dir):
        raise ConfigError(f"{reader.source}: adversary.reference_share.server_dir={server_dir!r} is not an absolute "
                          "path; give the folder as the server sees it")
    local = str(Path(os.path.abspath(local_dir))) if local_dir is not None else None
    return {"local_dir": local, "server_dir": (server_dir.rstrip("/") or "/") if server_dir else local, "keep": keep}


@dataclass
class ReferenceShare:
    local_dir: Path | None
    server_dir: str | None
    keep: bool
    protocol: str
    staged: dict[str, dict] = field(default_factory=dict)   # sha256 -> {"server_path", "created"}
    lock: threading.Lock = field(default_factory=threading.Lock)
    note: Callable[[dict], None] | None = None  # records a file before it is created (durably: the run's journal)

    @classmethod
    def from_params(cls, share: dict[str, Any], protocol: str) -> ReferenceShare:
        local = Path(share["local_dir"]) if share["local_dir"] else None
        return cls(local, share["server_dir"], bool(share["keep"]), protocol)

    def require(self) -> Path:
        """The share's local folder; a ConfigError saying how to share one when it is unset or missing."""
        if self.local_dir is None:
            raise ConfigError("adversary.reference_share.local_dir is not set. " + how_to_share(self.protocol))
        if not self.local_dir.is_dir():
            raise ConfigError(f"adversary.reference_share.local_dir={self.local_dir} is not an existing folder; create "
                              "it (and share it with the server). " + how_to_share(self.protocol))
        return self.local_dir

    def stage(self, audio: bytes, container: str = "WAV") -> tuple[str, str]:
        """Write ``audio`` into the share (once per content); its (server path, sha256)."""
        digest = hashlib.sha256(audio).hexdigest()
        name = f"{digest}.{EXTENSIONS.get(container, 'wav')}"
        self.require()
        with self.lock:
            found = self.staged.get(digest)
            if found is not None and (self.local_dir / found["name"]).is_file():
                return found["server_path"], digest
            local = self.local_dir / name
            existed = _holds(local, digest)
            if not existed:
                if self.note is not None:  # recorded before it exists: a kill after this leaves nothing unknown
                    self.note(self.entry(digest, name))
                atomic_write_bytes(local, audio)
            server_path = posixpath.join(self.server_dir, name)
            self.staged[digest] = {"name": name, "server_path": server_path,
                                   "created": not existed or bool(found and found["created"])}
            return server_path, digest

    def entry(self, digest: str, name: str) -> dict[str, Any]:
        """What ``note`` records of a file this run creates (and ``adopt`` reads back on a resume)."""
        return {"sha256": digest, "name": name, "local_dir": str(self.local_dir), "keep": self.keep}

    def adopt(self, entries: list[dict]) -> int:
        """Files earlier runs of the resume chain created (recorded by ``note``) and never removed (killed): this
        run removes them at its release, unless they were kept or are gone or changed. How many were adopted."""
        adopted = 0
        with self.lock:
            for entry in entries:
                name, digest = entry.get("name"), entry.get("sha256")
                if self.local_dir is None or entry.get("keep") or entry.get("local_dir") != str(self.local_dir) \
                        or not isinstance(name, str) or Path(name).name != name or name.startswith(".") \
                        or digest in self.staged:
                    continue
                for partial in self.local_dir.glob(f".{glob.escape(name)}.*.tmp"):  # killed mid-write (atomic.py)
                    partial.unlink(missing_ok=True)
                if not _holds(self.local_dir / name, digest):
                    continue
                self.staged[digest] = {"name": name, "server_path": posixpath.join(self.server_dir, name),
                                       "created": True, "adopted": True}
                adopted += 1
        return adopted

    def release(self) -> dict[str, Any]:
        """Remove what this run created (unless ``keep``); the record of what was staged. Idempotent."""
        if self.local_dir is None:
            return {"local_dir": None, "staged": []}
        with self.lock:
            for entry in self.staged.values():
                if entry["created"] and not self.keep and not entry.get("removed"):
                    try:
                        (self.local_dir / entry["name"]).unlink()
                    except FileNotFoundError:
                        pass
                    entry["removed"] = True
            record = {"local_dir": str(self.local_dir), "server_dir": self.server_dir, "keep": self.keep,
                      "staged": [{"sha256": d, "server_path": e["server_path"], "created": e["created"]}
                                 for d, e in sorted(self.staged.items())],
                      "removed": sum(1 for e in self.staged.values() if e.get("removed")),
                      "adopted": sum(1 for e in self.staged.values() if e.get("adopted"))}
            return record


def _holds(path: Path, digest: str) -> bool:
    """``path`` is a plain file (no symlink) holding the bytes whose sha256 is ``digest``."""
    return path.is_file() and not path.is_symlink() and hashlib.sha256(path.read_bytes()).hexdigest() == digest
