"""The design of a listening test: seeded speaker-stratified sampling, the trials of each kind, attention checks
and opaque ids (the design reads no audio: the recordings here are names only)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from clonebench.core.errors import ClonebenchError
from clonebench.listening.design import build_design, stratified_sample
from clonebench.listening.sources import Pair, Recording, System

SPEAKERS = {"spk-alpha": 5, "spk-beta": 3, "spk-gamma": 1}


def fake(label: str, pairs: dict[str, Pair]) -> System:
    system = System(label, Path(f"/runs/{label}"), Path(f"/runs/{label}"), label)
    system.clips = {p: Recording(Path(f"/runs/{label}/{p}.wav"), f"{label}-{p}") for p in pairs}
    return system


@pytest.fixture
def pairs() -> dict[str, Pair]:
    out = {}
    for speaker, count in SPEAKERS.items():
        for k in range(count):
            pid = f"pair-{speaker}-{k}"
            out[pid] = Pair(pid, speaker, Recording(Path(f"/d/{pid}-p.wav"), f"p-{pid}"),
                            Recording(Path(f"/d/{pid}-t.wav"), f"t-{pid}"))
    return out


def test_stratified_sample_spreads_items_over_speakers_and_is_seeded(pairs):
    for n in range(1, len(pairs) + 1):
        for seed in range(5):
            sample = stratified_sample(pairs, n, np.random.default_rng(seed))
            counts = Counter(p.speaker_id for p in sample)
            assert len(sample) == n == len({p.pair_id for p in sample})
            open_speakers = [counts[s] for s in SPEAKERS if counts[s] < SPEAKERS[s]]  # still had pairs left
            assert not open_speakers or max(counts.values()) - min(open_speakers) <= 1, (n, counts)
    one = [p.pair_id for p in stratified_sample(pairs, 4, np.random.default_rng(1))]
    assert one == [p.pair_id for p in stratified_sample(pairs, 4, np.random.default_rng(1))]
    assert any(one != [p.pair_id for p in stratified_sample(pairs, 4, np.random.default_rng(s))] for s in range(2, 6))
    with pytest.raises(ClonebenchError, match="--items 10: the runs have 9 pair"):
        stratified_sample(pairs, 10, np.random.default_rng(0))


def test_every_kind_has_its_trials_checks_and_training(pairs):
    systems = [fake("SysAlpha", pairs), fake("SysBeta", pairs)]
    counts = {}
    for kind in ("mos", "smos", "cmos", "mushra"):
        design = build_design(kind, systems, pairs, 4, 42, "secret", checks=2)
        counts[kind] = Counter((t.phase, t.type) for t in design.trials)
        test = [t for t in design.trials if t.phase == "test" and t.type == "rating"]
        if kind == "mushra":
            for trial in test:
                roles = sorted(design.clips[c].role for c in trial.clips)
                assert roles == ["anchor", "generated", "generated", "natural"]
                assert design.clips[trial.reference].role == "reference"
                assert design.clips[trial.reference].source == next(design.clips[c].source for c in trial.clips
                                                                    if design.clips[c].role == "natural")
        elif kind == "cmos":
            assert all(t.systems == ["S1", "S2"] for t in test)
        else:
            assert sorted(Counter(design.clips[t.clips[0]].system for t in test).items()) == \
                [("S1", 4), ("S2", 4), ("natural", 4)]
        for trial in design.trials:
            if trial.type == "check_repeat":
                first = next(t for t in design.trials if t.trial_id == trial.repeat_of)
                assert set(trial.clips).isdisjoint(first.clips)  # new ids ...
                assert [design.clips[c].source for c in trial.clips] == [design.clips[c].source for c in first.clips]
    assert counts["mos"] == {("test", "rating"): 12, ("test", "check_degraded"): 2, ("test", "check_repeat"): 2,
                             ("training", "rating"): 2}
    assert counts["smos"] == {("test", "rating"): 12, ("test", "check_other_speaker"): 2,
                              ("test", "check_repeat"): 2, ("training", "rating"): 2}
    assert counts["cmos"] == {("test", "rating"): 4, ("test", "check_degraded"): 2, ("test", "check_repeat"): 2,
                              ("training", "rating"): 1}
    assert counts["mushra"] == {("test", "rating"): 4, ("training", "rating"): 1}


def test_cmos_compares_one_run_with_the_natural_recordings_and_several_runs_pairwise(pairs):
    one = build_design("cmos", [fake("A", pairs)], pairs, 2, 1, "s", checks=0)
    assert {tuple(t.systems) for t in one.trials if t.phase == "test"} == {("natural", "S1")}
    three = build_design("cmos", [fake(x, pairs) for x in "ABC"], pairs, 2, 1, "s", checks=0)
    assert Counter(tuple(t.systems) for t in three.trials if t.phase == "test") == \
        {("S1", "S2"): 2, ("S1", "S3"): 2, ("S2", "S3"): 2}


def test_ids_are_opaque_unique_and_keyed_by_the_secret(pairs):
    systems = [fake("SysAlpha", pairs), fake("SysBeta", pairs)]
    design = build_design("smos", systems, pairs, 5, 3, "secret-1")
    ids = list(design.clips) + [t.trial_id for t in design.trials]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[ct][0-9a-f]{20}", i) for i in ids)
    other = build_design("smos", systems, pairs, 5, 3, "secret-2")
    assert set(other.clips).isdisjoint(design.clips)   # another secret, other ids ...
    assert [t.item for t in other.trials] == [t.item for t in design.trials]   # ... the same seeded design
    with pytest.raises(ClonebenchError, match="--kind 'abx'"):
        build_design("abx", systems, pairs, 2, 1, "s")
