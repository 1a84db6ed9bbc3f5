"""Agreement between raters: Krippendorff's alpha (the maintained ``krippendorff`` package), over the units every
kept rater rated (one unit per trial and condition: MOS/SMOS a clip, CMOS a comparison, MUSHRA a signal).

Level of measurement: ordinal for the category scales (MOS, SMOS: 1-5; CMOS: -3..+3; arena: the answer oriented
as -1 / 0 / +1), interval for MUSHRA's
0-100 slider. Alpha is 1 for perfect agreement, 0 for agreement at chance level; it needs two raters or more."""

from __future__ import annotations

import numpy as np

from clonebench.listening.wording import SCALES


def level(kind: str) -> str:
    return "interval" if SCALES[kind]["type"] == "slider" else "ordinal"


def alpha(matrix: np.ndarray, kind: str) -> float | None:
    """``matrix``: raters x units (NaN where a rater did not rate a unit)."""
    import krippendorff

    if matrix.shape[0] < 2 or matrix.shape[1] < 2:
        return None
    values = matrix[~np.isnan(matrix)]
    if np.unique(values).size < 2:
        return None  # one value everywhere: alpha is undefined (no variation to agree on)
    scale = SCALES[kind]
    domain = None if scale["type"] == "slider" else [-1, 0, 1] if kind == "arena" else \
        sorted(p[0] for p in scale["points"])
    return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level(kind), value_domain=domain))
