"""Holm-Bonferroni step-down adjustment of a family of p-values: the one copy that every comparison uses (N-system
``compare``, listening-test differences and CMOS).

scipy has no Holm adjustment and statsmodels is not a dependency for a dozen lines. Ties get the same adjusted
value whatever their order, so the result does not depend on how equal p-values are sorted.
"""

from __future__ import annotations


def holm(p_values: list[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values, in the given order (None stays None and is not counted)."""
    present = [(p, k) for k, p in enumerate(p_values) if p is not None]
    m = len(present)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, k) in enumerate(sorted(present)):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[k] = running
    return adjusted
