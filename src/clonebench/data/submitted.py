"""A folder of WAVs made outside clonebench, matched to a pair set and checked before anything is scored.

Each id of the pair set gets one file or one problem, named by kind:

- ``missing``: neither ``<id>.wav`` nor ``<task>/<pair_id>.wav``;
- ``wrong_id``: no such file, but one named like it (the pair id without the task prefix, clonebench's
  sample id, another task's prefix, other letter case, another extension): the message names that file;
- ``ambiguous``: both layouts exist with different bytes (rvcbench would silently take the nested one);
- ``unreadable``: not a regular file, or not a RIFF/WAVE file soundfile can read (PCM or float);
- ``empty``: zero bytes, or a WAV without frames; ``non_finite``: NaN or infinite samples;
- ``leak``: the file is a hidden target recording of the set (byte-identical, as rvcbench checks; or
  sample-identical: same rate and length, every sample within one 16-bit step, i.e. a re-encoded copy).
  A target that is also exported as a reference is public and is not a leak.

A usable file that is a byte copy of a reference recording is kept with a warning (it is not a clone).
Files that match no id are listed as ``extra`` (they belong to no id, so they fail nothing). Hidden files
(``.name``) are ignored.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from clonebench.data.audio import EmptyAudio, InvalidAudio, NonFiniteAudio, WavInfo, inspect_wav, to_mono, validate_wav
from clonebench.data.pair_sets import ID_SEPARATOR, PairSet
from clonebench.errors import ClonebenchError
from clonebench.hashing import sha256_bytes
from clonebench.records import Sample

KINDS = ("missing", "wrong_id", "ambiguous", "unreadable", "empty", "non_finite", "leak")
PCM16_STEP = 1.0 / 32768


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


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _listing(folder: Path) -> list[str]:
    """Every non-hidden entry below ``folder`` that is not a folder, as relative POSIX paths."""
    out = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                out.append((Path(dirpath) / name).relative_to(folder).as_posix())
    return out


def _look_alike(relpath: str, pair_set: PairSet) -> tuple[str, str] | None:
    """(id, how the file's name differs) when ``relpath`` is named like one id of the set, else None."""
    path = Path(relpath)
    stems = [path.stem] + ([f"{path.parent.as_posix()}{ID_SEPARATOR}{path.stem}"] if len(path.parts) == 2 else [])
    for sample in pair_set.samples:
        oid = pair_set.output_id(sample)
        for stem in stems:
            if stem == oid:
                return oid, f"its extension is {path.suffix or 'missing'!r}, not '.wav'"
            if stem.casefold() == oid.casefold():
                return oid, "its letter case differs from the id"
            if stem == sample.pair_id:
                return oid, f"it is named by the pair id without the '{pair_set.task}{ID_SEPARATOR}' prefix"
            if stem == sample.sample_id:
                return oid, "it is named by clonebench's sample_id, not the output id"
            if ID_SEPARATOR in stem and stem.split(ID_SEPARATOR, 1)[1] == sample.pair_id:
                return oid, f"its task prefix is {stem.split(ID_SEPARATOR, 1)[0]!r}, not {pair_set.task!r}"
    return None


class _Targets:
    """The hidden target recordings of a pair set, for the leak check: by sha256 and by (rate, frames)."""

    def __init__(self, pair_set: PairSet):
        public = {s.prompt.sha256 for s in pair_set.samples}
        self.by_sha = {s.target.sha256: s for s in pair_set.samples if s.target.sha256 not in public}
        self.by_shape: dict[tuple[int, int], list[Sample]] = {}
        for sample in self.by_sha.values():
            try:
                info = validate_wav(sample.target.read_bytes())
            except (OSError, InvalidAudio):
                continue
            self.by_shape.setdefault((info.sample_rate, info.frames), []).append(sample)

    def leak(self, sha: str, info: WavInfo, samples: np.ndarray) -> str | None:
        if sha in self.by_sha:
            return f"byte-identical to the hidden target recording of pair {self.by_sha[sha].pair_id}"
        mono = to_mono(samples).astype(np.float64)
        for target in self.by_shape.get((info.sample_rate, info.frames), []):
            _, other = inspect_wav(target.target.read_bytes())
            if np.max(np.abs(mono - to_mono(other).astype(np.float64))) <= PCM16_STEP * 1.001:
                return (f"sample-identical to the hidden target recording of pair {target.pair_id} (a re-encoded "
                        "copy of the answer)")
        return None


def _check_file(oid: str, sample: Sample, path: Path, targets: _Targets, references: dict[str, Sample]) -> SubmittedFile:
    if not _regular(path):
        return SubmittedFile(oid, sample, path, kind="unreadable", problem=f"{path} is not a regular file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        return SubmittedFile(oid, sample, path, kind="unreadable", problem=f"{path}: {exc.strerror}")
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
    leak = targets.leak(sha, info, samples)
    if leak:
        return SubmittedFile(oid, sample, path, sha, info, kind="leak", problem=f"{path} is {leak}: refused")
    warnings = ()
    if sha in references:
        warnings = (f"{path.name} is a byte copy of the reference recording of pair {references[sha].pair_id}, "
                    "not a clone",)
    return SubmittedFile(oid, sample, path, sha, info, warnings=warnings)


def check_folder(folder: Path, pair_set: PairSet) -> FolderCheck:
    """Match ``folder``'s files to the ids of ``pair_set`` and check each one (nothing is written)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ClonebenchError(f"generated audio folder not found: {folder} (give the folder holding <id>.wav files)")
    folder = folder.resolve()
    listing = _listing(folder)
    used: set[str] = set()
    targets = _Targets(pair_set)
    references = {s.prompt.sha256: s for s in pair_set.samples}
    found: dict[str, list[Path]] = {}
    for sample in pair_set.samples:
        oid = pair_set.output_id(sample)
        names = [f"{oid}.wav", f"{pair_set.task}/{sample.pair_id}.wav"]
        found[oid] = [folder / n for n in names if n in listing]
        used.update(n for n in names if n in listing)
    alike: dict[str, list[tuple[str, str]]] = {}
    for name in listing:
        if name not in used:
            match = _look_alike(name, pair_set)
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
        if len(paths) == 2 and paths[0].read_bytes() != paths[1].read_bytes():
            files.append(SubmittedFile(oid, sample, kind="ambiguous", problem=(
                f"both {paths[0].name} and {pair_set.task}/{paths[1].name} exist and differ; keep one")))
            continue
        files.append(_check_file(oid, sample, paths[0], targets, references))
    extra = [n for n in listing if n not in used and n not in extra_used]
    return FolderCheck(folder, pair_set.task, files, extra)
