"""Paths a run records, relative to its own folder, so that a run can be moved, copied or rsynced.

A file inside the run is recorded relative to the run folder (:func:`recorded`); a file outside it (a dataset's
prompt or target) keeps its absolute path. A reader resolves every recorded path against the run folder it was
given (:class:`RunFiles`), never against the folder the run was made in:

- a relative path: inside the given folder (confined: ``..`` or a link out of it is refused, ``core/confine.py``);
- an absolute path under the folder the run was made in (runs written before paths were relative, whose
  ``run_manifest.json`` / ``scoring_manifest.json`` name that folder), or one with a ``generated_audio`` part whose
  tail the given folder holds: that tail inside the given folder, counted for a note (a copy never reads or links
  the original's files);
- any other absolute path (outside the run): as recorded.

A reader that finds recorded files missing says which and how many (:meth:`RunFiles.missing_note`).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from clonebench.core.confine import inside
from clonebench.core.hashing import sha256_file
from clonebench.core.untrusted import UntrustedFileError, read_json

# the folders a run writes its audio into: an old absolute path with one of these parts is a file of the run
RUN_AUDIO_FOLDERS = ("generated_audio",)


def recorded(run_dir: Path, path: str | os.PathLike | None) -> str | None:
    """``path`` as a run records it: relative (POSIX separators) when it lies inside ``run_dir``, else absolute."""
    if path is None or os.fspath(path) == "":
        return None
    target = Path(path)
    candidates = [Path(os.path.abspath(run_dir))]
    if os.path.realpath(run_dir) != str(candidates[0]):
        candidates.append(Path(os.path.realpath(run_dir)))
    absolute = Path(os.path.abspath(target))
    for root in candidates:
        for form in (absolute, Path(os.path.realpath(target))):
            if form == root:
                return "."
            if root in form.parents:
                return PurePosixPath(*form.relative_to(root).parts).as_posix()
    return str(absolute)


class RunFiles:
    """Resolves the paths one run folder records; remembers what it rebased and what is missing."""

    def __init__(self, run_dir: Path, made_in: list[str | None] | tuple = (), what: str = ""):
        self.run_dir = Path(run_dir)
        self.made_in = [Path(m) for m in made_in if isinstance(m, str) and m and Path(m).is_absolute()]
        self.what = what or str(self.run_dir)
        self.missing: list[str] = []
        self.rebased = 0

    def _tail(self, path: Path) -> str | None:
        for root in self.made_in:
            if root == path:
                return "."
            if root in path.parents:
                return PurePosixPath(*path.relative_to(root).parts).as_posix()
        return self._anchored(path)

    def _anchored(self, path: Path) -> str | None:
        parts = path.parts
        for index in range(len(parts) - 1, 0, -1):
            if parts[index] in RUN_AUDIO_FOLDERS:  # only when the copy holds it: else a file of another run
                tail = PurePosixPath(*parts[index:]).as_posix()
                return tail if (self.run_dir / tail).exists() else None
        return None

    def locate(self, value: str | None, check: bool = True) -> Path | None:
        """The file ``value`` (as recorded) names, for this run folder; None for an empty value. With ``check``, a
        file that is not there is counted as missing (and still returned, for the message)."""
        if not value:
            return None
        path = Path(value)
        if path.is_absolute():
            tail = self._tail(path)
            if tail is not None:
                self.rebased += 1
                path = self.run_dir if tail == "." else inside(self.run_dir, tail, self.what)
        else:
            path = self.run_dir if value in (".", "./") else inside(self.run_dir, value, self.what)
            tail = None if path.exists() else self._anchored(Path(value))
            if tail is not None:  # an older merge recorded its files relative to the working directory
                self.rebased += 1
                path = inside(self.run_dir, tail, self.what)
        if check and not path.exists():
            self.missing.append(str(value))
        return path

    def missing_note(self, total: int | None = None) -> str | None:
        """One line naming the recorded files that are missing (the first five) and how many; None when none."""
        if not self.missing:
            return None
        shown = ", ".join(self.missing[:5]) + (", ..." if len(self.missing) > 5 else "")
        of = f" of {total}" if total is not None else ""
        return (f"{self.what}: {len(self.missing)}{of} recorded file(s) missing: {shown} (moved or deleted; restore "
                "them, or copy the run with every file it lists)")

    def rebased_note(self) -> str | None:
        if not self.rebased:
            return None
        return (f"{self.what}: {self.rebased} path(s) recorded as absolute by an older clonebench were read inside "
                f"{self.run_dir} (the run was moved or copied)")


def generation_run(run_dir: Path, source_run: object) -> Path:
    """The generation run an evaluated run scored (its ``scoring_manifest.json`` ``source_run.run_dir``), for the
    folder ``run_dir`` as given: ``.`` (or any path inside it) is that folder; an absolute path recorded by an older
    clonebench that is the folder the run was made in (its ``run_manifest.json`` ``run_dir``), or whose recorded
    manifest sha256 is this folder's manifest's, is that folder too, so a moved or copied run reads its own files,
    never the original's; any other path (an evaluate-only run of another run) as recorded."""
    run_dir = Path(run_dir)
    value = source_run.get("run_dir") if isinstance(source_run, dict) else None
    if not isinstance(value, str) or not value:
        return run_dir
    if source_run.get("merged_from_shards"):  # a merge scored itself (an older one recorded its folder as given)
        return run_dir
    if not Path(value).is_absolute():
        return RunFiles(run_dir, what=f"{run_dir / 'scoring_manifest.json'} source_run").locate(value, check=False)
    own = _made_in(run_dir)
    if own and Path(own) == Path(value):
        return run_dir
    recorded_sha = source_run.get("run_manifest_sha256")
    manifest = run_dir / "run_manifest.json"
    if isinstance(recorded_sha, str) and manifest.is_file() and sha256_file(manifest) == recorded_sha:
        return run_dir  # the manifest it scored is this folder's, byte for byte
    return Path(value)


def _made_in(run_dir: Path) -> str | None:
    """The folder a run was made in, as its ``run_manifest.json`` records it (``run_dir``), if it says."""
    try:
        manifest = read_json(Path(run_dir) / "run_manifest.json", max_bytes=512 * 1024 * 1024, follow=False,
                             what="run manifest")
    except (UntrustedFileError, OSError):
        return None
    value = manifest.get("run_dir") if isinstance(manifest, dict) else None
    return value if isinstance(value, str) else None


def run_files(run_dir: Path, source_run: object = None, what: str = "") -> RunFiles:
    """A :class:`RunFiles` for ``run_dir`` that knows the folders its old absolute paths were recorded under (its
    own ``run_manifest.json`` ``run_dir``, and the scored run's when that was this run)."""
    made_in = [_made_in(run_dir)]
    value = source_run.get("run_dir") if isinstance(source_run, dict) else None
    if isinstance(value, str) and generation_run(run_dir, source_run) == Path(run_dir):
        made_in.append(value)
    return RunFiles(run_dir, made_in, what)
