"""Reading and validating pair manifests (JSON list, JSON object with "pairs", or CSV).

Every problem found is collected and reported together, each naming the row, the field, the file
and the fix, before any request is sent.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

from clonebench.core.errors import ManifestError
from clonebench.core.hashing import sha256_bytes
from clonebench.core.records import AudioRef, PairRow, Sample
from clonebench.core.untrusted import UntrustedFileError, parse_json, read_bytes
from clonebench.data.audio import InvalidAudio, validate_input_audio
from clonebench.data.audio_cache import AudioCheckCache
from clonebench.data.identity import SEED_MAX, sample_id, sample_seed
from clonebench.data.ids import ID_FIELDS, id_problem
from clonebench.data.seedtts import is_meta_list, meta_rows

REQUIRED_TEXT = ("dataset_name", "split", "pair_id", "speaker_id", "prompt_file_name", "target_file_name",
                 "prompt_text", "target_text", "prompt_language", "target_language")
OPTIONAL_TEXT = ("manifest_variant", "source_manifest", "prompt_sha256", "target_sha256")
OPTIONAL_INT = ("source_row",)
ROW_FIELDS = tuple(f.name for f in fields(PairRow))
MAX_MANIFEST_BYTES = 256 * 1024 * 1024   # a manifest larger than this is refused (full-v1's largest is a few MB)
MAX_AUDIO_FILE_BYTES = 512 * 1024 * 1024  # a prompt/target clip larger than this is refused before it is read


@dataclass(frozen=True)
class Selection:
    """Which rows of a manifest a run uses."""

    manifest_variant: str | None = "speaker"
    speaker_id: str | None = None
    max_samples: int | None = None


def _decoded(path: Path) -> str:
    """The file's text: UTF-8, with or without a byte-order mark; else a ManifestError naming the line."""
    try:
        data = read_bytes(path, max_bytes=MAX_MANIFEST_BYTES, what="manifest")
    except UntrustedFileError as exc:
        raise ManifestError(str(path), [str(exc)]) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        row = f" (row {line - 2})" if path.suffix.lower() == ".csv" and line >= 2 else ""
        raise ManifestError(str(path), [f"{path} line {line}{row}, byte {exc.start}: not valid UTF-8 "
                                        f"({exc.reason}); save the manifest as UTF-8"]) from None


def read_rows(path: Path) -> list[dict]:
    """Raw rows of a manifest file. JSON: a list of objects, or an object with a "pairs" list; CSV; a Seed-TTS-eval
    meta list (``.lst``)."""
    if not os.path.lexists(path):
        raise ManifestError(str(path), [f"manifest file not found: {path} (check dataset.manifest_filename)"])
    text = _decoded(path)
    if is_meta_list(path):  # a Seed-TTS-eval meta list (data/seedtts.py)
        return meta_rows(text, path)
    if path.suffix.lower() == ".csv":
        try:
            return [dict(r) for r in csv.DictReader(io.StringIO(text, newline=""))]
        except csv.Error as exc:
            raise ManifestError(str(path), [f"{path}: not a readable CSV ({exc})"]) from None
    try:
        payload = parse_json(text, path, "manifest")
    except UntrustedFileError as exc:
        raise ManifestError(str(path), [f"not valid JSON: {exc}"]) from None
    if isinstance(payload, dict) and isinstance(payload.get("pairs"), list):
        payload = payload["pairs"]
    if not isinstance(payload, list) or not all(isinstance(r, dict) for r in payload):
        raise ManifestError(str(path), ["expected a JSON list of row objects or an object with a 'pairs' list"])
    return payload


def _as_int(value, name: str, where: str, problems: list[str]) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        problems.append(f"{where}: field '{name}' must be an integer, got {value!r}")
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        problems.append(f"{where}: field '{name}' must be an integer, got {value!r}")
        return None
    if isinstance(value, float) and value != number:
        problems.append(f"{where}: field '{name}' must be an integer, got {value!r}")
        return None
    return number


def parse_row(raw: dict, where: str, problems: list[str]) -> PairRow | None:
    """A typed row, or None after appending what is wrong with it to ``problems``."""
    before = len(problems)
    values: dict = {}
    for name in REQUIRED_TEXT:
        value = raw.get(name)
        if value is None or not isinstance(value, str) and not isinstance(value, int):
            problems.append(f"{where}: missing field '{name}' (add it to the row)")
            continue
        value = str(value)
        if not value.strip():
            kind = "transcript" if name.endswith("_text") else "field"
            problems.append(f"{where}: empty {kind} '{name}' (every pair needs a non-empty {name})")
            continue
        values[name] = value
    for name in OPTIONAL_TEXT:
        value = raw.get(name)
        values[name] = None if value in (None, "") else str(value)
    for name in REQUIRED_TEXT + OPTIONAL_TEXT:
        value = values.get(name)
        if value is None:
            continue
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            problems.append(f"{where}: field '{name}' is not valid Unicode text (it holds a lone surrogate such as "
                            "\\ud800); fix the row")
            continue
        problem = id_problem(name, value) if name in ID_FIELDS else None
        if problem:
            problems.append(f"{where}: {problem}")
    for name in OPTIONAL_INT:
        values[name] = _as_int(raw.get(name), name, where, problems)
    source_index = _as_int(raw.get("source_index"), "source_index", where, problems)
    if source_index is None and "source_index" not in " ".join(problems[before:]):
        problems.append(f"{where}: missing field 'source_index' (the row's index in its population; seeds derive from it)")
    elif source_index is not None and not 0 <= source_index <= SEED_MAX:
        problems.append(f"{where}: source_index {source_index} is out of range 0..{SEED_MAX}")
    values["source_index"] = source_index
    for name in ("prompt_sha256", "target_sha256"):
        digest = values.get(name)
        if digest is not None and (len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest.lower())):
            problems.append(f"{where}: {name} {digest!r} is not a sha256 hex digest")
    if len(problems) > before:
        return None
    return PairRow(**{k: values.get(k) for k in ROW_FIELDS})


def select_rows(rows: list[tuple[int, PairRow]], selection: Selection) -> list[tuple[int, PairRow]]:
    chosen = [
        (i, r) for i, r in rows
        if (selection.manifest_variant is None or r.manifest_variant == selection.manifest_variant)
        and (selection.speaker_id is None or r.speaker_id == str(selection.speaker_id))
    ]
    if selection.max_samples is not None:
        chosen = chosen[: selection.max_samples]
    return chosen


def empty_selection_advice(parsed: list[tuple[int, PairRow]], selection: Selection,
                           variant_key: str = "dataset.manifest_variant") -> str:
    """Why no row was selected, naming the setting that excluded them (not one that is already open)."""
    head = f"no rows selected (manifest_variant={selection.manifest_variant!r}, speaker_id={selection.speaker_id!r})"
    if not parsed:
        return f"{head}: the manifest has no rows; add pairs to it"
    variants = sorted({str(r.manifest_variant) for _, r in parsed})
    of_variant = [r for _, r in parsed if selection.manifest_variant is None or r.manifest_variant == selection.manifest_variant]
    if not of_variant:
        return f"{head}: no row has that manifest_variant; the manifest's variants are {variants}: set {variant_key}=" \
               "one of them, or null to take every row"
    speakers = sorted({r.speaker_id for r in of_variant})
    shown = speakers[:10] + (["..."] if len(speakers) > 10 else [])
    scope = "" if selection.manifest_variant is None else f" of variant {selection.manifest_variant!r}"
    return f"{head}: no row{scope} has speaker_id {selection.speaker_id!r}; its speakers are {shown}: set " \
           "dataset.speaker_id=one of them, or null to take every speaker"


def resolve_audio(name: str, base: Path, where: str, field: str, problems: list[str]) -> Path | None:
    """``name`` resolved under ``base`` (itself already resolved); a path that escapes it (``..``, absolute,
    symlink) is an error."""
    candidate = Path(name)
    full = candidate if candidate.is_absolute() else base / candidate
    real = Path(os.path.realpath(full))
    real_base = base  # resolved once by the caller
    if real != real_base and real_base not in real.parents:
        problems.append(f"{where}: {field} {name!r} resolves to {real}, outside the dataset root {real_base}"
                        " (paths must stay under dataset.root_path)")
        return None
    if not real.is_file():
        problems.append(f"{where}: {field} {name!r} not found at {real} (check dataset.root_path)")
        return None
    return real


def verify_audio(data: bytes, expected: str | None, where: str, field: str, problems: list[str],
                 path: Path | None = None, keep_bytes: bool = False) -> AudioRef | None:
    """An AudioRef for ``data`` after checking its sha256 against the manifest and that it is usable audio."""
    digest = sha256_bytes(data)
    shown = path if path is not None else f"{field} audio"
    if expected is not None and digest != expected.lower():
        problems.append(f"{where}: {field} {shown} has sha256 {digest}, the manifest says {expected}"
                        " (wrong file or wrong dataset.root_path)")
        return None
    try:
        validate_input_audio(data, path.name if path is not None else None)
    except InvalidAudio as exc:
        problems.append(f"{where}: {field} {shown} is not usable audio: {exc}")
        return None
    return AudioRef(label=field, sha256=digest, path=path, data=data if keep_bytes else None)


# An audio source turns (row, field name, where, problems) into a verified AudioRef, or None after
# recording a problem: files under a root for manifests, in-memory bytes for HF datasets.
AudioSource = Callable[[int, PairRow, str, str, list], "AudioRef | None"]


def file_audio_source(base: Path, checked: AudioCheckCache | None = None) -> AudioSource:
    """Files under ``base``; with ``checked``, a file unchanged since it was last validated is not read again."""
    real_base = Path(os.path.realpath(base))

    def source(number: int, row: PairRow, field: str, where: str, problems: list) -> AudioRef | None:
        name = getattr(row, field)
        expected = row.prompt_sha256 if field == "prompt_file_name" else row.target_sha256
        path = resolve_audio(name, real_base, where, field, problems)
        if path is None:
            return None
        known = checked.known_valid(path) if checked else None
        if known is not None and (expected is None or known == expected.lower()):
            return AudioRef(label=field, sha256=known, path=path)
        try:
            data = read_bytes(path, max_bytes=MAX_AUDIO_FILE_BYTES, within=real_base, what=f"{where}: {field}")
        except UntrustedFileError as exc:
            problems.append(str(exc))
            return None
        ref = verify_audio(data, expected, where, field, problems, path=path)
        if ref is not None and checked is not None:
            checked.remember(path, ref.sha256)
        return ref
    return source


def declared_audio_source(number: int, row: PairRow, field: str, where: str, problems: list) -> AudioRef | None:
    """Audio known only by the manifest's declared hash (no file is read)."""
    expected = row.prompt_sha256 if field == "prompt_file_name" else row.target_sha256
    if expected is None:
        problems.append(f"{where}: no {field.split('_')[0]}_sha256 in the row; give the audio root to hash the file")
        return None
    return AudioRef(label=field, sha256=expected.lower())


def parse_rows(raw_rows: list[dict], label: str, problems: list[str], bad: dict[int, str]) -> list[tuple[int, PairRow]]:
    parsed = []
    for number, raw in enumerate(raw_rows):
        where = f"{label} row {number}" + (f" (pair_id {raw.get('pair_id')!r})" if raw.get("pair_id") else "")
        start = len(problems)
        row = parse_row(raw, where, problems)
        if row is None:
            bad[number] = "; ".join(problems[start:])
        else:
            parsed.append((number, row))
    return parsed


def samples_from_rows(
    label: str, raw_rows: list[dict], selection: Selection, run_seed: int | None, audio: AudioSource,
    variant_key: str = "dataset.manifest_variant",
) -> list[Sample]:
    """Parse and select rows, then resolve and verify their audio; one ManifestError lists every problem."""
    problems: list[str] = []
    bad: dict[int, str] = {}
    parsed = parse_rows(raw_rows, label, problems, bad)
    chosen = select_rows(parsed, selection)
    if not chosen and not problems:
        problems.append(empty_selection_advice(parsed, selection, variant_key))
    samples: list[Sample] = []
    seen: dict[str, int] = {}
    for number, row in chosen:
        where = f"{label} row {number} (pair_id {row.pair_id!r})"
        start = len(problems)
        sid = sample_id(row)
        if sid in seen:
            problems.append(f"{where}: duplicate sample id {sid[:16]}... (same dataset/split/pair/speaker/variant as row {seen[sid]})")
        seen.setdefault(sid, number)
        seed = sample_seed(run_seed, row)
        if seed is not None and seed > SEED_MAX:
            problems.append(f"{where}: seed {run_seed} + source_index {row.source_index} exceeds {SEED_MAX} (use a smaller +seed)")
        prompt = audio(number, row, "prompt_file_name", where, problems)
        target = audio(number, row, "target_file_name", where, problems)
        if len(problems) > start:
            bad[number] = "; ".join(problems[start:])
            continue
        samples.append(Sample(row=row, row_number=number, sample_id=sid, prompt=prompt, target=target, seed=seed))
    if problems:
        raise ManifestError(label, problems, bad)
    return samples


def build_samples(manifest: Path, root: Path | None, selection: Selection, run_seed: int | None,
                  verify_audio_files: bool = True, variant_key: str = "dataset.manifest_variant",
                  checked: AudioCheckCache | None = None) -> list[Sample]:
    """Samples of a manifest file; paths resolve under ``root``, else relative to the manifest's folder.

    With ``checked``, newly validated files are recorded only once every row has passed.
    """
    manifest = Path(manifest)
    raw_rows = read_rows(manifest)
    base = Path(root) if root is not None else manifest.parent
    source = file_audio_source(base, checked) if verify_audio_files else declared_audio_source
    samples = samples_from_rows(str(manifest), raw_rows, selection, run_seed, source, variant_key)
    if checked is not None:
        checked.commit()
    return samples
