"""Reading a test's key and its raters' files, refusing any file that does not belong: another test's, another
kind's, an edited or truncated one (integrity digest), one with a trial missing, repeated or unknown, clips
other than the trial's, or a rating off the scale. Every problem of every file is reported at once.

Every file is untrusted: it is read through :mod:`clonebench.core.untrusted` (a regular file only, never blocking on
a FIFO or a device, its size bounded before and while reading, JSON integers and nesting bounded, no NaN), and
every value is type-checked against a strict schema per file kind before use (pydantic v2 models with
``strict=True``, in :mod:`clonebench.listening.schemas`). A refusal is a :class:`RatingsError` (a
ClonebenchError: the command line prints it and exits 2), listing each problem with the file and the JSON location
(``ratings.trials[3].trial``) and what was expected, never a long value."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from clonebench.core.errors import ClonebenchError
from clonebench.core.untrusted import (
    MAX_JSON_DEPTH,
    UntrustedFileError,
    parse_json,
    printable,
    read_bytes,
)
from clonebench.listening.build import KEY, KEY_SCHEMA
from clonebench.listening.integrity import ALGORITHM, digest
from clonebench.listening.schemas import (
    Envelope,
    Header,
    Key,
    brief,
    payload_model,
    problems,
)
from clonebench.listening.wording import SCALES

RATINGS_SCHEMA = "clonebench.listening.ratings/v1"
RATER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
SHOWN_PROBLEMS = 8
MAX_BYTES = 64 * 1024 * 1024  # a 10,000-trial MUSHRA file is a few MB
MAX_KEY_BYTES = 256 * 1024 * 1024  # a key lists every clip and trial with their sources: larger than a ratings file


class RatingsError(ClonebenchError):
    """A ratings file (or the test's key) was refused. ``problems`` maps each refused file to its problems."""

    def __init__(self, message: str, problems: dict[str, list[str]] | None = None):
        super().__init__(message)
        self.problems = problems or {}


@dataclass
class Sheet:
    """One rater's file, checked: the test trials by id (each a record as the page wrote it)."""

    path: Path
    sha256: str
    rater: str
    user_agent: str
    records: dict[str, dict]


def load_key(test_dir: Path) -> dict:
    path = Path(test_dir) / KEY
    if not os.path.lexists(path):
        raise RatingsError(f"{printable(str(test_dir))}: no {KEY}; give the folder `clonebench listening-test "
                           "--output` wrote")
    key = _read_json(path, MAX_KEY_BYTES, "listening-test key", within=test_dir)
    shown = printable(str(path))
    if isinstance(key, dict) and key.get("schema") != KEY_SCHEMA:
        raise RatingsError(f"{shown}: schema {brief(key.get('schema'))}, expected {KEY_SCHEMA!r}")
    try:
        Key.model_validate(key)
    except ValidationError as exc:
        lines = problems(exc, limit=SHOWN_PROBLEMS)
        raise RatingsError(f"{shown}: not a listening-test key as `clonebench listening-test` writes it:\n  "
                           + "\n  ".join(lines), {str(path): lines}) from None
    return key


def _read_json(path: Path, max_bytes: int, what: str, within: Path | None = None):
    """The parsed JSON of an untrusted file; RatingsError (one line, no content echoed) if it is refused."""
    try:
        data = read_bytes(path, max_bytes=max_bytes, within=within, what=what)
        return _parse(data, path, what)
    except UntrustedFileError as exc:
        raise RatingsError(str(exc), {str(path): [exc.reason]}) from None


def _parse(data: bytes, path: Path, what: str):
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UntrustedFileError(path, f"not UTF-8 text (invalid byte at offset {exc.start})", "save it as UTF-8",
                                 what) from None
    return parse_json(text, path, what)


def _detail(exc: UntrustedFileError, what: str) -> str:
    """The refusal without its leading file name (the report names the file once)."""
    prefix = f"{what} {printable(os.fspath(exc.path))}: "
    text = str(exc)
    text = text[len(prefix):] if text.startswith(prefix) else exc.reason
    if exc.reason == "nested too deeply":
        text += f" (more than {MAX_JSON_DEPTH} levels: refused before a RecursionError)"
    return text


def allowed_ratings(kind: str) -> set:
    """The answers a ``kind`` of test accepts (its scale's points); the rating server checks each answer with it."""
    scale = SCALES[kind]
    return set(range(scale["min"], scale["max"] + 1)) if scale["type"] == "slider" else {p[0] for p in scale["points"]}


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def record_problems(record, trial: dict, kind: str, allowed: set[int]) -> list[str]:
    """What is wrong with one answer ``record`` to ``trial`` (its clips, its ratings); the ratings files' rule, which
    the rating server applies to each answer as it arrives. Every problem, not only the first."""
    return list(field_problems(record, trial, kind, allowed).values())


def field_problems(record: dict, trial: dict, kind: str, allowed: set[int]) -> dict[str, str]:
    """:func:`record_problems` by field: ``{field: what is wrong with it}``, each field checked."""
    tid, found = trial["trial_id"], {}
    clips = record.get("clips")
    if not isinstance(clips, list) or not all(isinstance(c, str) for c in clips) or \
            sorted(clips) != sorted(trial["clips"]) or (kind in ("mos", "smos") and clips != trial["clips"]):
        found["clips"] = f"trial {tid}: clips {brief(clips)} are not the trial's clips"
    if record.get("reference") != trial["reference"]:
        found["reference"] = f"trial {tid}: reference {brief(record.get('reference'))} is not the trial's"
    if kind == "mushra":
        values, n = record.get("ratings"), len(trial["clips"])
        if not isinstance(values, list) or len(values) != n or not all(_is_int(v) and v in allowed for v in values):
            found["ratings"] = f"trial {tid}: ratings {brief(values)} are not {n} integers {min(allowed)}..{max(allowed)}"
    elif kind == "arena":
        if not (isinstance(record.get("rating"), str) and record["rating"] in allowed):
            found["rating"] = f"trial {tid}: rating {brief(record.get('rating'))} is not one of {sorted(allowed)}"
    elif not (_is_int(record.get("rating")) and record["rating"] in allowed):
        found["rating"] = f"trial {tid}: rating {brief(record.get('rating'))} is not one of {sorted(allowed)}"
    for field in ("shown_ms", "answered_ms", "position"):
        if not _is_int(record.get(field)):
            found[field] = f"trial {tid}: {field} {brief(record.get(field))} is not an integer"
    return found


def check_sheet(path: Path, key: dict) -> tuple[Sheet | None, list[str]]:
    """The file as a Sheet, or the list of reasons it is refused."""
    what = "ratings file"
    try:
        raw = read_bytes(path, max_bytes=MAX_BYTES, what=what)
        data = _parse(raw, Path(path), what)
    except UntrustedFileError as exc:
        return None, [f"not a readable JSON file ({_detail(exc, what)})"]
    try:
        envelope = Envelope.model_validate(data)
    except ValidationError as exc:
        return None, ["not a ratings file (expected 'ratings' and 'integrity' objects, as the page downloads)",
                      *problems(exc)]
    payload = data["ratings"]
    try:
        Header.model_validate(payload)
    except ValidationError as exc:
        return None, problems(exc, root="ratings")
    if payload.get("schema") != RATINGS_SCHEMA:
        return None, [f"schema {brief(payload.get('schema'))}, expected {RATINGS_SCHEMA!r}"]
    if payload.get("test_id") != key["test_id"]:
        return None, [f"ratings of test {brief(payload.get('test_id'))}, but this test is {key['test_id']!r}: "
                      "the file belongs to another test folder"]
    if payload.get("kind") != key["kind"]:
        return None, [f"kind {brief(payload.get('kind'))}, but this test is {key['kind']!r}"]
    try:
        matches = envelope.integrity.algorithm == ALGORITHM and \
            envelope.integrity.digest == digest(key["salt"], payload)
    except (RecursionError, ValueError, TypeError):  # a lone surrogate (or worse): not the page's file
        matches = False
    if not matches:
        return None, ["integrity digest does not match the ratings: the file was edited, truncated or corrupted "
                      "after the page wrote it; ask the rater for the file as downloaded"]
    found: list[str] = []  # every problem of the file in one pass: its shape's, then its answers'
    typed: set[tuple] = set()  # (record index, field) with a shape problem: not repeated in the answer rule's words
    try:
        payload_model(key["kind"]).model_validate(payload)
    except ValidationError as exc:
        found += problems(exc, root="ratings")
        typed = {tuple(e["loc"][1:3]) for e in exc.errors(include_url=False, include_input=False,
                                                           include_context=False) if e["loc"][:1] == ("trials",)}
    rater = payload.get("rater_id")
    if isinstance(rater, str) and not RATER.fullmatch(rater):
        found.append(f"rater id {brief(rater)} is not 1-64 letters, digits, '.', '_', '-'")
    trials = {t["trial_id"]: t for t in key["trials"] if t["phase"] == "test"}
    records = payload.get("trials") if isinstance(payload.get("trials"), list) else []
    seen = {}
    for position, record in enumerate(records):
        tid = record.get("trial") if isinstance(record, dict) else None
        if not isinstance(tid, str):
            continue  # not a record: its shape problem is listed
        if tid not in trials:
            found.append(f"trial {brief(tid)} is not a trial of this test")
        elif tid in seen:
            found.append(f"trial {brief(tid)} appears twice")
        else:
            seen[tid] = record
            fields = field_problems(record, trials[tid], key["kind"], allowed_ratings(key["kind"]))
            found += [text for field, text in fields.items() if (position, field) not in typed]
            if _is_int(record.get("position")) and record["position"] != position:
                found.append(f"trial {brief(tid)}: position {brief(record.get('position'))}, listed at {position}")
    missing = [t for t in trials if t not in seen]
    if missing:
        found.append(f"{len(missing)} of {len(trials)} trials missing ({', '.join(missing[:3])}"
                     f"{', ...' if len(missing) > 3 else ''}): the rater did not finish")
    if found:
        return None, found
    agent = payload.get("user_agent", "")
    agent = agent if isinstance(agent, str) else printable(str(agent) if agent is not None else "None", 1000)
    return Sheet(Path(path), hashlib.sha256(raw).hexdigest(), rater, agent, seen), []


def load_sheets(key: dict, paths: list[Path]) -> list[Sheet]:
    """Every file checked; any refusal stops with every problem of every file listed."""
    if not paths:
        raise RatingsError("no ratings file given")
    sheets, report, refused = [], [], {}
    for path in paths:
        sheet, found = check_sheet(path, key)
        if found:
            refused[str(path)] = found
            shown = found[:SHOWN_PROBLEMS] + ([f"... {len(found) - SHOWN_PROBLEMS} more"]
                                              if len(found) > SHOWN_PROBLEMS else [])
            report.append(f"{printable(str(path))}: refused:\n  " + "\n  ".join(shown))
        else:
            sheets.append(sheet)
    by_rater: dict[str, list[str]] = {}
    for sheet in sheets:
        by_rater.setdefault(sheet.rater, []).append(str(sheet.path))
    report += [f"rater {rater!r} has {len(files)} files ({', '.join(map(printable, files))}): keep one (a rater "
               "rates a test once)"
               for rater, files in by_rater.items() if len(files) > 1]
    if report:
        raise RatingsError("\n".join(report), refused)
    return sheets
