"""What a rater may send: the order drawn for them, and each answer checked against the test's key.

The order is drawn once, when the rater is created, from a seed stored with them (``random.Random(seed)``):
training trials in the key's order, test trials shuffled, clips shuffled within a trial for CMOS and MUSHRA (as
the static page does). It is stored, so a rater who reloads gets the very same order.

An answer is ``{"phase": "training"|"test", "record": {...}}`` with the record as the page writes it. It must be
the rater's next trial (training first), with the trial's clips in the order the rater was shown, the reference,
a value on the test's scale and integer times. A replay of an answered trial with the same answer is accepted
again (idempotent: a retry after a lost acknowledgement) and changes nothing; with another answer it is refused
(409): an answer, once acknowledged, is final."""

from __future__ import annotations

import random

from pydantic import ValidationError

from clonebench.listening import schemas
from clonebench.listening.ratings import allowed_ratings, record_problems
from clonebench.listening.schemas import brief, problems

MIXED = ("cmos", "arena", "mushra")  # kinds whose clips are shuffled within a trial (as the page does)
PHASES = ("training", "test")


class Refused(Exception):
    """An answer refused: ``status`` is the HTTP status, ``problems`` what is wrong (never the sent value)."""

    def __init__(self, status: int, problems: list[str]):
        super().__init__("; ".join(problems))
        self.status, self.problems = status, problems


def draw_order(key: dict, seed: int) -> dict[str, list[dict]]:
    rand = random.Random(seed)
    mixed = key["kind"] in MIXED

    def arrange(trial: dict) -> dict:
        clips = list(trial["clips"])
        if mixed:
            rand.shuffle(clips)
        return {"id": trial["trial_id"], "reference": trial["reference"], "clips": clips}

    training = [arrange(t) for t in key["trials"] if t["phase"] == "training"]
    test = [t for t in key["trials"] if t["phase"] == "test"]
    rand.shuffle(test)
    return {"training": training, "test": [arrange(t) for t in test]}


def _record_model(kind: str) -> type[schemas.Record]:
    return {"mushra": schemas.MushraRecord, "arena": getattr(schemas, "ArenaRecord", None)}.get(kind) \
        or schemas.CategoryRecord


def _value(record: dict):
    return record.get("ratings") if "ratings" in record else record.get("rating")


def _kept(record: dict, clips: list[str], kind: str) -> dict:
    """The record as stored: the fields the ratings file has (plays and ends only as clip -> count)."""
    out = {k: record[k] for k in ("trial", "position", "clips", "reference", "shown_ms", "answered_ms")}
    out["ratings" if kind == "mushra" else "rating"] = _value(record)
    for field in ("plays", "ends"):
        counts = record.get(field)
        if isinstance(counts, dict) and all(c in clips and type(v) is int and 0 <= v <= 10**6
                                            for c, v in counts.items()):
            out[field] = counts
    return out


def check_answer(key: dict, order: dict, answered: dict[str, list[dict]], body) -> tuple[str, dict, bool]:
    """(phase, the record to store, whether it is a replay of a stored answer) or :class:`Refused`."""
    if not isinstance(body, dict) or body.get("phase") not in PHASES or not isinstance(body.get("record"), dict):
        raise Refused(422, ['expected {"phase": "training" or "test", "record": {...}}'])
    phase, record, kind = body["phase"], body["record"], key["kind"]
    try:
        _record_model(kind).model_validate(record)
    except ValidationError as exc:
        raise Refused(422, problems(exc, root="record")) from None
    trial_id, position = record["trial"], record["position"]
    sequence, done = order[phase], answered[phase]
    if position >= len(sequence) or sequence[position]["id"] != trial_id:
        known = any(t["id"] == trial_id for p in PHASES for t in order[p])
        raise Refused(422, [f"trial {brief(trial_id)} is not " + ("the trial at this position" if known
                                                                   else "a trial of this test")])
    if position < len(done):
        if _value(done[position]) == _value(record) and done[position]["clips"] == record["clips"]:
            return phase, done[position], True
        raise Refused(409, [f"trial {trial_id} was already answered (position {position}); an answer is final"])
    if phase == "test" and len(answered["training"]) < len(order["training"]):
        raise Refused(409, ["finish the training first"])
    if position > len(done):
        raise Refused(409, [f"answer position {len(done)} first (got position {position})"])
    shown = sequence[position]
    if record["clips"] != shown["clips"]:
        raise Refused(422, [f"trial {trial_id}: clips {brief(record['clips'])} are not the clips shown, in order"])
    trial = next(t for t in key["trials"] if t["trial_id"] == trial_id)
    found = record_problems(record, trial, kind, allowed_ratings(kind))
    if found:
        raise Refused(422, found)
    return phase, _kept(record, shown["clips"] + ([shown["reference"]] if shown["reference"] else []), kind), False


def finished(order: dict, answered: dict[str, list[dict]]) -> bool:
    return all(len(answered[p]) == len(order[p]) for p in PHASES)
