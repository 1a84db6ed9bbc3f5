"""Reading a test's key and its raters' files, refusing any file that does not belong: another test's, another
kind's, an edited or truncated one (integrity digest), one with a trial missing, repeated or unknown, clips
other than the trial's, or a rating off the scale. Every problem of every file is reported at once."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from clonebench.core.errors import ClonebenchError
from clonebench.core.hashing import sha256_file
from clonebench.listening.build import KEY, KEY_SCHEMA
from clonebench.listening.integrity import ALGORITHM, digest
from clonebench.listening.wording import SCALES

RATINGS_SCHEMA = "clonebench.listening.ratings/v1"
RATER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
SHOWN_PROBLEMS = 8
MAX_BYTES = 64 * 1024 * 1024  # a 10,000-trial MUSHRA file is a few MB


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
    if not path.is_file():
        raise ClonebenchError(f"{test_dir}: no {KEY}; give the folder `clonebench listening-test --output` wrote")
    key = json.loads(path.read_text(encoding="utf-8"))
    if key.get("schema") != KEY_SCHEMA:
        raise ClonebenchError(f"{path}: schema {key.get('schema')!r}, expected {KEY_SCHEMA!r}")
    return key


def _allowed(kind: str) -> set[int]:
    scale = SCALES[kind]
    return set(range(scale["min"], scale["max"] + 1)) if scale["type"] == "slider" else {p[0] for p in scale["points"]}


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _record_problems(record, trial: dict, kind: str, allowed: set[int]) -> list[str]:
    tid = trial["trial_id"]
    clips = record.get("clips")
    if not isinstance(clips, list) or not all(isinstance(c, str) for c in clips) or \
            sorted(clips) != sorted(trial["clips"]):
        return [f"trial {tid}: clips {clips!r} are not the trial's clips"]
    if kind in ("mos", "smos") and clips != trial["clips"]:
        return [f"trial {tid}: clips {clips!r} are not the trial's clips"]
    if record.get("reference") != trial["reference"]:
        return [f"trial {tid}: reference {record.get('reference')!r} is not the trial's"]
    problems = []
    if kind == "mushra":
        values = record.get("ratings")
        if not isinstance(values, list) or len(values) != len(clips) or \
                not all(_is_int(v) and v in allowed for v in values):
            problems.append(f"trial {tid}: ratings {values!r} are not {len(clips)} integers {min(allowed)}..{max(allowed)}")
    elif not (_is_int(record.get("rating")) and record["rating"] in allowed):
        problems.append(f"trial {tid}: rating {record.get('rating')!r} is not one of {sorted(allowed)}")
    for field in ("shown_ms", "answered_ms", "position"):
        if not _is_int(record.get(field)):
            problems.append(f"trial {tid}: {field} {record.get(field)!r} is not an integer")
    return problems


def check_sheet(path: Path, key: dict) -> tuple[Sheet | None, list[str]]:
    """The file as a Sheet, or the list of reasons it is refused."""
    try:
        if Path(path).stat().st_size > MAX_BYTES:
            return None, [f"{Path(path).stat().st_size} bytes: larger than any ratings file ({MAX_BYTES} bytes at most)"]
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        return None, [f"not a readable JSON file ({type(exc).__name__}: {exc})"]
    payload = data.get("ratings") if isinstance(data, dict) else None
    integrity = data.get("integrity") if isinstance(data, dict) else None
    if not isinstance(payload, dict) or not isinstance(integrity, dict):
        return None, ["not a ratings file (expected 'ratings' and 'integrity' objects, as the page downloads)"]
    if payload.get("schema") != RATINGS_SCHEMA:
        return None, [f"schema {payload.get('schema')!r}, expected {RATINGS_SCHEMA!r}"]
    if payload.get("test_id") != key["test_id"]:
        return None, [f"ratings of test {payload.get('test_id')!r}, but this test is {key['test_id']!r}: the file "
                      "belongs to another test folder"]
    if payload.get("kind") != key["kind"]:
        return None, [f"kind {payload.get('kind')!r}, but this test is {key['kind']!r}"]
    try:
        matches = integrity.get("algorithm") == ALGORITHM and integrity.get("digest") == digest(key["salt"], payload)
    except (RecursionError, ValueError):  # nesting too deep to serialise, or a lone surrogate: not the page's file
        matches = False
    if not matches:
        return None, ["integrity digest does not match the ratings: the file was edited, truncated or corrupted "
                      "after the page wrote it; ask the rater for the file as downloaded"]
    rater = payload.get("rater_id")
    if not isinstance(rater, str) or not RATER.fullmatch(rater):
        return None, [f"rater id {rater!r} is not 1-64 letters, digits, '.', '_', '-'"]
    trials = {t["trial_id"]: t for t in key["trials"] if t["phase"] == "test"}
    records = payload.get("trials")
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        return None, ["'trials' is not a list of trial records"]
    problems, seen = [], {}
    for position, record in enumerate(records):
        tid = record.get("trial")
        if tid not in trials:
            problems.append(f"trial {tid!r} is not a trial of this test")
        elif tid in seen:
            problems.append(f"trial {tid} appears twice")
        else:
            seen[tid] = record
            problems += _record_problems(record, trials[tid], key["kind"], _allowed(key["kind"]))
            if record.get("position") != position:
                problems.append(f"trial {tid}: position {record.get('position')!r}, listed at {position}")
    missing = [t for t in trials if t not in seen]
    if missing:
        problems.append(f"{len(missing)} of {len(trials)} trials missing ({', '.join(missing[:3])}"
                        f"{', ...' if len(missing) > 3 else ''}): the rater did not finish")
    if problems:
        return None, problems
    return Sheet(Path(path), sha256_file(path), rater, str(payload.get("user_agent", "")), seen), []


def load_sheets(key: dict, paths: list[Path]) -> list[Sheet]:
    """Every file checked; any refusal stops with every problem of every file listed."""
    if not paths:
        raise ClonebenchError("no ratings file given")
    sheets, report = [], []
    for path in paths:
        sheet, problems = check_sheet(path, key)
        if problems:
            shown = problems[:SHOWN_PROBLEMS] + ([f"... {len(problems) - SHOWN_PROBLEMS} more"]
                                                 if len(problems) > SHOWN_PROBLEMS else [])
            report.append(f"{path}: refused:\n  " + "\n  ".join(shown))
        else:
            sheets.append(sheet)
    by_rater: dict[str, list[str]] = {}
    for sheet in sheets:
        by_rater.setdefault(sheet.rater, []).append(str(sheet.path))
    report += [f"rater {rater!r} has {len(files)} files ({', '.join(files)}): keep one (a rater rates a test once)"
               for rater, files in by_rater.items() if len(files) > 1]
    if report:
        raise ClonebenchError("\n".join(report))
    return sheets
