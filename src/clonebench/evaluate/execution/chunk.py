"""Scoring one chunk of items with a loaded scorer: the per-item rules (too short, invalid value, an item that
raises isolated from the rest) that the parent process and the CPU pool's workers (evaluate/execution/cpu_pool.py) share,
so a value never depends on where it was computed."""

from __future__ import annotations

import logging

from clonebench.evaluate.protocols.base import ScoreItem, Scorer, ScoreRecord
from clonebench.evaluate.protocols.validity import checked, too_short

log = logging.getLogger(__name__)


def score(scorer: Scorer, items: list[ScoreItem]) -> list[ScoreRecord]:
    """Records for ``items`` in order: clips too short for the scorer and invalid values become errors."""
    return score_chunk(scorer, items)[0]


def score_chunk(scorer: Scorer, items: list[ScoreItem]) -> tuple[list[ScoreRecord], set[str], int]:
    """``score``'s records, the ids of the items whose error the scorer raised, and how many items the scorer
    ran on (not too short): what the fail-fast needs."""
    short = {item.sample_id: too_short(scorer, item) for item in items}
    usable = [item for item in items if short[item.sample_id] is None]
    raised: set[str] = set()
    records = _score_usable(scorer, usable, raised) if usable else []
    scored = {item.sample_id: checked(scorer.name, r) for item, r in zip(usable, records)}
    return [short[item.sample_id] or scored[item.sample_id] for item in items], raised, len(usable)


def _score_usable(scorer: Scorer, items: list[ScoreItem], raised: set[str]) -> list[ScoreRecord]:
    try:
        return scorer.score_batch(items)
    except Exception as exc:  # isolate the bad item: score one at a time, keep the others
        if len(items) == 1:
            raised.add(items[0].sample_id)
            return [ScoreRecord(items[0].sample_id, error=f"{type(exc).__name__}: {exc}")]
        log.warning("%s batch failed (%r); scoring its %d items one at a time", scorer.name, exc, len(items))
        return [r for item in items for r in _score_usable(scorer, [item], raised)]
