"""Sample identity, input fingerprint and per-sample seeds (the scoring conventions, docs/statistics.md)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from clonebench.core.records import PairRow, Sample

SEED_MAX = 2**31 - 1  # Fish's set_seed caps at 2**31; numpy/torch seeds must fit in it


def _digest(payload) -> str:
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sample_id(row: PairRow) -> str:
    """sha256 over the row's identity fields; ``manifest_variant`` only when the row has one."""
    return sample_id_of(row.dataset_name, row.split, row.pair_id, row.speaker_id, row.manifest_variant)


def sample_id_of(dataset_name: str | None, split: str | None, pair_id: str | None, speaker_id: str | None,
                 manifest_variant: str | None = None) -> str:
    """``sample_id`` of a row with these identity fields (a missing one as ``""``)."""
    ident = {"dataset_name": dataset_name or "", "split": split or "", "pair_id": pair_id or "",
             "speaker_id": speaker_id or ""}
    if manifest_variant is not None:
        ident["manifest_variant"] = manifest_variant
    return _digest(ident)


def input_fingerprint(samples: Iterable[Sample]) -> str:
    """Digest of the list, in manifest order, of each sample's inputs."""
    return _digest([
        {
            "sample_id": s.sample_id,
            "prompt_sha256": s.prompt.sha256,
            "target_sha256": s.target.sha256,
            "prompt_text": s.row.prompt_text,
            "target_text": s.row.target_text,
            "prompt_language": s.row.prompt_language,
            "target_language": s.row.target_language,
            "source_index": s.row.source_index,
        }
        for s in samples
    ])


def sample_seed(run_seed: int | None, row: PairRow) -> int | None:
    """Run seed + the pair's original source_index; ``None`` for an unseeded run."""
    if run_seed is None:
        return None
    return run_seed + row.source_index


def digest(payload) -> str:
    """The project's canonical JSON digest (sorted keys, UTF-8)."""
    return _digest(payload)
