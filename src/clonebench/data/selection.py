"""Sample selection: the pairs a run uses, all shards together or one shard's share.

Shared by the generate, evaluate and merge phases and by ``clonebench repeat``; it depends on the data
readers only (manifest files or HF datasets), never on a pipeline phase.
"""

from __future__ import annotations

from clonebench.core.records import Sample
from clonebench.data.audio_cache import AudioCheckCache
from clonebench.data.hf import build_samples_hf
from clonebench.data.manifest import Selection, build_samples


def shard_members(sample_ids: list[str], count: int, index: int) -> set[str]:
    """The ids of shard ``index`` of ``count``: block ``index`` of the sorted ids, so shards differ in size by at
    most one pair (a hash modulo the count gave 5/0/1/2 pairs on 8) and no shard is empty while there are at least
    ``count`` pairs. Membership depends on the selected ids alone: the same manifest and selection give the same
    shards on every node and every run; adding pairs moves the block boundaries (merge checks the union)."""
    ordered = sorted(set(sample_ids))
    return set(ordered[index * len(ordered) // count:(index + 1) * len(ordered) // count])


def load_all_samples(settings) -> list[Sample]:
    """Every selected pair, all shards together (``settings``: a RunSettings)."""
    ds = settings.dataset
    selection = Selection(ds.manifest_variant, ds.speaker_id, settings.client.max_samples)
    if ds.use_hf_dataset:
        return build_samples_hf(ds.hf_path, ds.hf_config, ds.hf_split, ds.hf_audio_columns, selection, settings.seed)
    checked = AudioCheckCache(settings.hash_cache)
    try:
        return build_samples(ds.manifest_filename, ds.root_path, selection, settings.seed, checked=checked)
    finally:
        checked.close()


def load_samples(settings) -> list[Sample]:
    """This job's pairs: the selection, narrowed to shard ``vc.shard.index`` of ``vc.shard.count``."""
    samples = load_all_samples(settings)
    count, index = settings.vc.shard_count, settings.vc.shard_index
    if count == 1:
        return samples
    members = shard_members([s.sample_id for s in samples], count, index)
    return [s for s in samples if s.sample_id in members]
