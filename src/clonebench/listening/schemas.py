"""Strict schemas of the listening room's untrusted JSON files: a rater's ratings file (per test kind) and a test's
key read back from the folder the user gave.

Every model is a pydantic v2 model with ``strict=True``: no coercion (a bool is not a number, ``"3"`` is not an
integer, a list is not a trial id), integers bounded, strings and lists bounded in length. Unknown fields are
ignored (the page may add fields; they are never used). A file is first read through
:mod:`clonebench.core.untrusted` (regular files only, never blocking, size bounded, JSON integers and nesting
bounded, no NaN); these models then check every value before it is used, and :func:`problems` turns pydantic's
errors into readable lines naming the JSON location (``ratings.trials[3].trial``) and what was expected, never
the value itself.
"""

from __future__ import annotations

import reprlib
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from clonebench.core.untrusted import printable

STRICT = ConfigDict(strict=True, extra="ignore")

Id = Annotated[str, Field(max_length=256)]
Text = Annotated[str, Field(max_length=100_000)]
Answer = Annotated[int, Field(ge=-1_000_000, le=1_000_000)]       # on the scale: checked against the key after
Millis = Annotated[int, Field(ge=-10**15, le=10**15)]             # ~30,000 years either way
Position = Annotated[int, Field(ge=0, le=10**7)]
Clips = Annotated[list[Id], Field(max_length=1000)]


class Integrity(BaseModel):
    model_config = STRICT
    algorithm: Id
    digest: Id


class Envelope(BaseModel):
    """The file as the page downloads it: the ratings and their integrity digest."""

    model_config = STRICT
    ratings: dict[str, Any]
    integrity: Integrity


class Header(BaseModel):
    """What tells which test and kind a file belongs to (checked before the digest)."""

    model_config = STRICT
    schema_: Id = Field(alias="schema")
    test_id: Id
    kind: Id


class Record(BaseModel):
    model_config = STRICT
    trial: Id
    position: Position
    clips: Clips
    reference: Id | None = None
    shown_ms: Millis
    answered_ms: Millis


class CategoryRecord(Record):
    """MOS, SMOS, CMOS: one answer per trial (an integer on the scale)."""

    rating: Answer


class ArenaRecord(Record):
    """Arena: which of the two clips, in the order shown, is better: "A" (the first), "B" or "same"."""

    rating: Literal["A", "B", "same"]


class MushraRecord(Record):
    """MUSHRA: one answer per clip, in the order the clips are listed."""

    ratings: Annotated[list[Answer], Field(max_length=1000)]


class Payload(BaseModel):
    model_config = STRICT
    schema_: Id = Field(alias="schema")
    test_id: Id
    kind: Id
    rater_id: Id
    user_agent: Any = ""          # kept as text only (any JSON value was accepted before; the page writes a string)
    trials: Annotated[list[CategoryRecord], Field(max_length=1_000_000)]


class MushraPayload(Payload):
    trials: Annotated[list[MushraRecord], Field(max_length=1_000_000)]


class ArenaPayload(Payload):
    trials: Annotated[list[ArenaRecord], Field(max_length=1_000_000)]


def payload_model(kind: str) -> type[Payload]:
    return {"mushra": MushraPayload, "arena": ArenaPayload}.get(kind, Payload)


# -- the key (written by clonebench, read back from the folder the user gave) --------------------------------------

class KeyTrial(BaseModel):
    model_config = STRICT
    trial_id: Id
    phase: Literal["training", "test"]
    type: Id
    item: Id
    clips: Clips
    reference: Id | None = None
    repeat_of: Id | None = None
    systems: Annotated[list[Id], Field(max_length=2)] = []


class KeyClip(BaseModel):
    model_config = STRICT
    role: Id
    system: Id | None = None   # a check clip (another speaker, a degraded copy) stands for no system


class KeySystem(BaseModel):
    model_config = STRICT
    code: Id
    label: Text


class KeyItem(BaseModel):
    model_config = STRICT
    pair_id: Id


class KeySampling(BaseModel):
    model_config = STRICT
    items: list[KeyItem]


class KeyScreening(BaseModel):
    model_config = STRICT
    max_failed_fraction: float
    degraded_max: Answer
    other_speaker_max: Answer
    cmos_degraded_margin: Answer
    repeat_max_difference: dict[Id, Answer]
    mushra_hidden_reference_min: Answer
    mushra_max_fraction_below: float


class Key(BaseModel):
    model_config = STRICT
    schema_: Id = Field(alias="schema")
    test_id: Id
    kind: Literal["mos", "smos", "cmos", "mushra", "arena"]
    title: Text
    salt: Id
    systems: list[KeySystem]
    sampling: KeySampling
    screening: KeyScreening
    clips: dict[Id, KeyClip]
    trials: list[KeyTrial]


# -- readable problems ----------------------------------------------------------------------------------------------

_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxdict, _SHORT.maxtuple = 2, 6, 4, 6
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 60, 60, 40


def brief(value: Any, limit: int = 120) -> str:
    """A short, printable repr of an untrusted value (long strings, lists and nesting cut)."""
    return printable(_SHORT.repr(value), limit)


def location(loc: tuple, root: str = "") -> str:
    out = root
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            name = printable(str(part), 40)
            out += f".{name}" if out else name
    return out or "(the whole file)"


def problems(error: ValidationError, root: str = "", limit: int = 50) -> list[str]:
    """One line per problem: where (JSON location) and what was expected; the value is never echoed."""
    lines = []
    for item in error.errors(include_url=False, include_input=False, include_context=False)[:limit]:
        lines.append(f"{location(tuple(item['loc']), root)}: {printable(item['msg'], 200)}")
    if error.error_count() > limit:
        lines.append(f"... {error.error_count() - limit} more")
    return lines
