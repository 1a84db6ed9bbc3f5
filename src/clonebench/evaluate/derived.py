"""Score items of a derived task (``derived_from`` + ``transform``): rvcbench 2.2.1's ``_derived_rows`` rule.

Each generated clip of the source task is transformed (``transform.transform_wav``), and the processed clip is
scored against the **unprocessed clone** it came from: the derived item's target is the source item's generated
WAV (and its sha256), its generated clip the transformed WAV; pair, speaker, text and language are the source's.
A source sample that has no generated clip stays in the task as a failure ("Source sample failed in <task>"), as
upstream keeps it; so do a source clip whose bytes no longer match its recorded sha256 and a clip ffmpeg fails on
(clonebench's rule; upstream stops the whole submission on an ffmpeg error).

The processed clips go to ``audio_dir/<speaker>/<file name of the source clip>`` (upstream: ``audio_dir/<file
name>``; the speaker folder mirrors clonebench's ``generated_audio`` layout, so two speakers' clips never collide).
``suite.derived_run`` records them, each with its own sha256, as the derived task's own generation run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from clonebench.core.hashing import sha256_file
from clonebench.evaluate.execution.overlap import map_items
from clonebench.evaluate.protocols.base import ScoreItem
from clonebench.evaluate.protocols.transform import Transform, transform_wav

SOURCE_FAILED, SOURCE_CHANGED, TRANSFORM_FAILED = "source_failed", "source_changed", "transform_failed"


@dataclass(frozen=True)
class DerivedItem:
    """One sample of a derived task: ``item`` to score, or ``error`` (of kind ``kind``) when it cannot be scored."""

    sample_id: str
    item: ScoreItem | None
    error: str | None = None
    kind: str | None = None       # SOURCE_FAILED | SOURCE_CHANGED | TRANSFORM_FAILED when ``item`` is None


def derived_item(source: ScoreItem, destination: Path, destination_sha256: str) -> ScoreItem:
    """The derived task's item for ``source`` once transformed to ``destination``: the unprocessed clone is the
    target (``_derived_rows``: ``target_path = source generated_path``)."""
    return dataclasses.replace(source, target_path=source.generated_path, target_sha256=source.generated_sha256,
                               generated_path=destination, generated_sha256=destination_sha256)


def derive_items(derived_from: str, transform: Transform, sources: Mapping[str, ScoreItem | None],
                 audio_dir: Path) -> list[DerivedItem]:
    """Transform every source clip into ``audio_dir`` and build the derived task's items, in ``sources`` order.

    ``sources``: sample id -> the source task's score item, or None when that sample has no generated clip.
    Call ``transform.check_ffmpeg([transform])`` first (a missing encoder is refused before any scoring)."""
    out: dict[str, DerivedItem] = {}
    taken: dict[Path, str] = {}
    work: list[tuple[str, ScoreItem, Path]] = []
    for sample_id, source in sources.items():
        if source is None:
            out[sample_id] = DerivedItem(sample_id, None, f"Source sample failed in {derived_from}", SOURCE_FAILED)
            continue
        destination = Path(audio_dir) / source.speaker_id / Path(source.generated_path).name
        if destination in taken:
            raise ValueError(f"{derived_from}: samples {taken[destination]} and {sample_id} would both be written "
                             f"to {destination}")
        taken[destination] = sample_id
        work.append((sample_id, source, destination))

    def derive(entry: tuple[str, ScoreItem, Path]) -> DerivedItem:
        sample_id, source, destination = entry
        actual = sha256_file(Path(source.generated_path))
        if actual != source.generated_sha256:
            return DerivedItem(sample_id, None, f"source clip {source.generated_path} in {derived_from} has sha256 "
                                                f"{actual}, recorded {source.generated_sha256}", SOURCE_CHANGED)
        try:
            digest = transform_wav(Path(source.generated_path), destination, transform)
        except RuntimeError as exc:  # ffmpeg refused this clip: that sample fails, not the task
            return DerivedItem(sample_id, None, str(exc), TRANSFORM_FAILED)
        return DerivedItem(sample_id, derived_item(source, destination, digest))

    # each clip is its own ffmpeg processes (deterministic bytes): they run side by side on the spare cores
    for item in map_items(derive, work):
        out[item.sample_id] = item
    return [out[sample_id] for sample_id in sources]
