"""A folder of WAVs made outside clonebench, matched to a pair set and checked before anything is scored.

Each id of the pair set gets one file or one problem, named by kind:

- ``missing``: neither ``<id>.wav`` nor ``<task>/<pair_id>.wav``;
- ``wrong_id``: no such file, but one named like it (the pair id without the task prefix, clonebench's
  sample id, another task's prefix, other letter case, another extension): the message names that file;
- ``ambiguous``: both layouts exist with different bytes (rvcbench would silently take the nested one);
- ``unreadable``: not a regular file (a directory, FIFO, socket or device named ``<id>.wav``: never opened for
  reading, never waited on), a symbolic link that leads outside the folder (refused unread: a link to a system
  file or to another model's outputs is no submission), or not a WAV of the family data/audio.py accepts
  (RIFF/WAVE, WAVE_FORMAT_EXTENSIBLE or RF64 with PCM or float samples, sizes that fit). A symbolic link that
  stays inside the folder is followed. Every file is opened through ``clonebench.core.untrusted``, and no problem
  text quotes a byte of a file (a category is named instead);
- ``too_long``: the WAV header declares more than ``evaluation.max_clip_seconds`` of audio (checked from the header,
  before anything is decoded);
- ``empty``: zero bytes, or a WAV without frames; ``non_finite``: NaN or infinite samples;
- ``leak``: the file is a hidden target recording (``clonebench.external.leak``: byte-identical, as rvcbench checks;
  sample-identical; or a processed copy of its pair's target);
- ``unreadable`` also covers a file over ``MAX_BYTES`` (not read).

A usable file is kept with a warning when it is a byte copy of a reference recording (not a clone) or the same
audio as another id's file. Files that match no id are listed as ``extra`` (they belong to no id, so they fail
nothing); a name that is not valid UTF-8 is shown with escapes. Hidden files (``.name``) are ignored.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from clonebench.core.errors import ClonebenchError
from clonebench.core.hashing import sha256_bytes
from clonebench.core.records import Sample
from clonebench.core.untrusted import UntrustedFileError, open_regular, read_fd
from clonebench.data.audio import (HEADER_BYTES, EmptyAudio, InvalidAudio, NonFiniteAudio, WavInfo, inspect_wav,
                                   wav_header_duration)
from clonebench.evaluate.settings import MAX_CLIP_SECONDS
from clonebench.external.leak import Targets
from clonebench.external.pair_sets import ID_SEPARATOR, PairSet, bare_names

KINDS = ("missing", "wrong_id", "ambiguous", "unreadable", "too_long", "empty", "non_finite", "leak")
MAX_BYTES = 2 * 1024 ** 3  # larger than any speech clip a scorer reads: refused unread
# evaluation.max_clip_seconds when a caller gives none: the settings' default (configs/evaluation/default.yaml says
# why: twice rvcbench's longest task, and it refuses hours of audio)
DEFAULT_MAX_CLIP_SECONDS = MAX_CLIP_SECONDS


@dataclass(frozen=True)
class SubmittedFile:
    """One id of the pair set: the file found for it and its check."""

    output_id: str
    sample: Sample
    path: Path | None = None
    sha256: str | None = None
    info: WavInfo | None = None
    kind: str | None = None          # one of KINDS when the id fails
    problem: str | None = None
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.kind is None


@dataclass
class FolderCheck:
    folder: Path
    task: str
    files: list[SubmittedFile]
    extra: list[str] = field(default_factory=list)

    def usable(self) -> list[SubmittedFile]:
        return [f for f in self.files if f.ok]

    def counts(self) -> dict[str, int]:
        out = {kind: sum(f.kind == kind for f in self.files) for kind in KINDS}
        return {"ids": len(self.files), "usable": len(self.usable()), **out, "extra": len(self.extra)}

    def lines(self) -> list[str]:
        """Every problem and warning, one line each, per id in pair-set order, then the extra files."""
        out = [f"{f.output_id}: {f.kind}: {f.problem}" for f in self.files if not f.ok]
        out += [f"{f.output_id}: warning: {w}" for f in self.files for w in f.warnings]
        out += [f"extra file (matches no id): {name}" for name in self.extra]
        return out

    def as_dict(self) -> dict:
        return {"folder": str(self.folder), "task": self.task, "counts": self.counts(),
                "problems": {f.output_id: {"kind": f.kind, "problem": f.problem} for f in self.files if not f.ok},
                "warnings": {f.output_id: list(f.warnings) for f in self.files if f.warnings},
                "extra": self.extra,
                "files": {f.output_id: {"file": str(f.path.relative_to(self.folder)) if f.path else None,
                                        "sha256": f.sha256} for f in self.files if f.ok}}


def _listing(folder: Path) -> list[str]:
    """Every non-hidden entry below ``folder`` that is not a folder, as relative POSIX paths."""
    out = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                out.append(printable((Path(dirpath) / name).relative_to(folder).as_posix()))
    return out


def printable(name: str) -> str:
    """A file name as text that can be written to JSON: bytes that are not UTF-8 shown as escapes."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _names(pair_set: PairSet) -> dict[str, tuple[str, str]]:
    """Names a file could wrongly carry for an id -> (id, how it differs); exact keys, and casefolded ids."""
    out: dict[str, tuple[str, str]] = {}
    for sample in pair_set.samples:
        oid = pair_set.output_id(sample)
        out.setdefault(sample.pair_id, (oid, f"it is named by the pair id without the '{pair_set.task}"
                                             f"{ID_SEPARATOR}' prefix"))
        out.setdefault(sample.sample_id, (oid, "it is named by clonebench's sample_id, not the output id"))
        out.setdefault("casefold:" + oid.casefold(), (oid, "its letter case differs from the id"))
    return out


def _look_alike(relpath: str, pair_set: PairSet, names: dict, ids: set[str]) -> tuple[str, str] | None:
    """(id, how the file's name differs) when ``relpath`` is named like one id of the set, else None."""
    path = Path(relpath)
    stems = [path.stem] + ([f"{path.parent.as_posix()}{ID_SEPARATOR}{path.stem}"] if len(path.parts) == 2 else [])
    for stem in stems:
        if stem in ids:
            return stem, f"its extension is {path.suffix or 'missing'!r}, not '.wav'"
        if stem in names:
            return names[stem]
        if "casefold:" + stem.casefold() in names:
            return names["casefold:" + stem.casefold()]
        prefix, separator, pair_id = stem.partition(ID_SEPARATOR)
        if separator and pair_id in names and names[pair_id][0].endswith(ID_SEPARATOR + pair_id):
            return names[pair_id][0], f"its task prefix is {prefix!r}, not {pair_set.task!r}"
    return None


def _check_file(oid: str, sample: Sample, path: Path, targets: Targets, references: dict[str, Sample],
                folder: Path | None = None, max_seconds: float | None = DEFAULT_MAX_CLIP_SECONDS) -> SubmittedFile:
    where = folder if folder is not None else path.parent
    try:
        fd, stat_result = open_regular(path, within=where, max_bytes=MAX_BYTES, what="submitted file")
    except UntrustedFileError as exc:
        if exc.reason.startswith("too large"):
            return SubmittedFile(oid, sample, path, kind="unreadable", problem=(
                f"{path} is {exc.reason}: over the {MAX_BYTES}-byte limit, not read"))
        return SubmittedFile(oid, sample, path, kind="unreadable", problem=str(exc))
    try:
        try:
            head = os.read(fd, HEADER_BYTES)
            seconds = wav_header_duration(head, stat_result.st_size)
            if max_seconds is not None and seconds is not None and seconds > max_seconds:
                return SubmittedFile(oid, sample, path, kind="too_long", problem=(
                    f"{path}: its WAV header declares {seconds:.1f} s of audio, over evaluation.max_clip_seconds="
                    f"{max_seconds:g}: not decoded (give a clip of at most {max_seconds:g} s, or raise "
                    "evaluation.max_clip_seconds)"))
            data = read_fd(fd, MAX_BYTES, head)
        except OSError as exc:
            return SubmittedFile(oid, sample, path, kind="unreadable", problem=f"{path}: {exc.strerror}")
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        return SubmittedFile(oid, sample, path, kind="unreadable", problem=(
            f"{path} grew past the {MAX_BYTES}-byte limit while read: not used"))
    if not data:
        return SubmittedFile(oid, sample, path, kind="empty", problem=f"{path} has 0 bytes")
    sha = sha256_bytes(data)
    try:
        info, samples = inspect_wav(data)
    except EmptyAudio as exc:
        return SubmittedFile(oid, sample, path, sha, kind="empty", problem=f"{path}: {exc}")
    except NonFiniteAudio as exc:
        return SubmittedFile(oid, sample, path, sha, kind="non_finite", problem=f"{path}: {exc}")
    except InvalidAudio as exc:
        return SubmittedFile(oid, sample, path, sha, kind="unreadable", problem=f"{path}: {exc}")
    if max_seconds is not None and info.duration_s > max_seconds:  # a header the quick parse could not read
        return SubmittedFile(oid, sample, path, sha, info, kind="too_long", problem=(
            f"{path}: {info.duration_s:.1f} s of audio, over evaluation.max_clip_seconds={max_seconds:g} (give a "
            f"clip of at most {max_seconds:g} s, or raise evaluation.max_clip_seconds)"))
    leak = targets.leak(sample, sha, info, samples)
    if leak:
        return SubmittedFile(oid, sample, path, sha, info, kind="leak", problem=f"{path} is {leak}: refused")
    warnings = ()
    if sha in references:
        warnings = (f"{path.name} is a byte copy of the reference recording of pair {references[sha].pair_id}, "
                    "not a clone",)
    return SubmittedFile(oid, sample, path, sha, info, warnings=warnings)


def _same_file_content(a: Path, b: Path, folder: Path) -> bool:
    """Both regular files inside ``folder`` with the same bytes (compared in chunks through
    ``core.untrusted``: a FIFO, device or a link leading out of the folder is never read)."""
    try:
        fa, _ = open_regular(a, within=folder, max_bytes=MAX_BYTES)
    except UntrustedFileError:
        return False
    try:
        try:
            fb, _ = open_regular(b, within=folder, max_bytes=MAX_BYTES)
        except UntrustedFileError:
            return False
        try:
            while True:
                ca, cb = os.read(fa, 1 << 20), os.read(fb, 1 << 20)
                if ca != cb:
                    return False
                if not ca:
                    return True
        except OSError:
            return False
        finally:
            os.close(fb)
    finally:
        os.close(fa)


def _same_audio_warnings(files: list[SubmittedFile]) -> list[SubmittedFile]:
    """Usable files whose bytes another id's file has too get a warning naming the first such id."""
    first: dict[str, str] = {}
    out = []
    for f in files:
        if f.ok and f.sha256 in first:
            f = replace(f, warnings=f.warnings + (f"the same audio as the file of {first[f.sha256]}",))
        elif f.ok:
            first[f.sha256] = f.output_id
        out.append(f)
    return out


def check_folder(folder: Path, pair_set: PairSet,
                 max_clip_seconds: float | None = DEFAULT_MAX_CLIP_SECONDS) -> FolderCheck:
    """Match ``folder``'s files to the ids of ``pair_set`` and check each one (nothing is written). Every file is
    confined to ``folder``; a clip whose header declares more than ``max_clip_seconds`` is ``too_long``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ClonebenchError(f"generated audio folder not found: {folder} (give the folder holding <id>.wav files)")
    folder = folder.resolve()
    listing = _listing(folder)
    present = set(listing)
    used: set[str] = set()
    targets = Targets(pair_set)
    references = {s.prompt.sha256: s for s in pair_set.samples}
    found: dict[str, list[Path]] = {}
    for sample in pair_set.samples:
        oid = pair_set.output_id(sample)
        names = [f"{oid}.wav", f"{pair_set.task}/{sample.pair_id}.wav"]
        if bare_names(pair_set):  # Seed-TTS-eval's scripts write (and read) <utt>.wav
            names.append(f"{sample.pair_id}.wav")
        # lexists, not the listing: a directory, or a link to one, named <id>.wav is this id's (bad) file, not
        # "missing"; any link is the id's and is then confined to the folder when opened
        hits = [n for n in names if n in present or os.path.lexists(folder / n)]
        found[oid] = [folder / n for n in hits]
        used.update(hits)
    alike: dict[str, list[tuple[str, str]]] = {}
    lookup, ids = _names(pair_set), set(pair_set.ids())
    for name in listing:
        if name not in used:
            match = _look_alike(name, pair_set, lookup, ids)
            if match:
                alike.setdefault(match[0], []).append((name, match[1]))
    files, extra_used = [], set()
    for sample in pair_set.samples:
        oid = pair_set.output_id(sample)
        paths = found[oid]
        if not paths:
            if oid in alike:
                name, how = alike[oid][0]
                extra_used.update(n for n, _ in alike[oid])
                files.append(SubmittedFile(oid, sample, kind="wrong_id", problem=(
                    f"no {oid}.wav, but {name} is named like it: {how}; rename it to {oid}.wav")))
            else:
                files.append(SubmittedFile(oid, sample, kind="missing", problem=(
                    f"neither {oid}.wav nor {pair_set.task}/{sample.pair_id}.wav in {folder}")))
            continue
        if len(paths) == 2 and not _same_file_content(paths[0], paths[1], folder):
            files.append(SubmittedFile(oid, sample, kind="ambiguous", problem=(
                f"both {paths[0].name} and {pair_set.task}/{paths[1].name} exist and differ; keep one")))
            continue
        files.append(_check_file(oid, sample, paths[0], targets, references, folder, max_clip_seconds))
    extra = [n for n in listing if n not in used and n not in extra_used]
    return FolderCheck(folder, pair_set.task, _same_audio_warnings(files), extra)
