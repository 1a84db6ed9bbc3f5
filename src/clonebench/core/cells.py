"""Numbers from table cells (CSV text, JSON values) that a file may carry as text, empty, non-finite or boolean:
the one reading every room shares, so that a blank or ``nan`` cell is missing everywhere, never 0."""

from __future__ import annotations

import math


def as_number(value) -> float | None:
    """A finite float from a CSV/JSON cell, else None."""
    if value in (None, ""):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def strict_number(value) -> float | None:
    """``as_number``, a boolean never counting as a number (as rvcbench's validity rule and JSON records)."""
    return None if isinstance(value, bool) else as_number(value)
