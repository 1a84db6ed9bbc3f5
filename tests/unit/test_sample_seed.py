"""Per-sample scoring seeds: the state rvcbench 2.2.1's ``configure_seeds`` sets, and the seed of each sample id."""

from __future__ import annotations

import hashlib
import os
import random

import numpy as np
import pytest
import torch

from clonebench.evaluate.protocols.sample_seed import SEED_MODULUS, sample_hash, scoring_seed, seeded


def draws() -> tuple:
    return (random.random(), float(np.random.rand()), float(torch.rand(1)), os.environ.get("PYTHONHASHSEED"),
            torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)


@pytest.mark.parametrize("value", [0, 42, 1_234_567_890, SEED_MODULUS - 1, 2**32 + 5])
def test_seeded_sets_what_the_peers_configure_seeds_sets(value):
    from rvcbench.utils.seeding import configure_seeds

    from tests.peer import process_state_kept

    with process_state_kept():
        configure_seeds(value)
        expected = draws()
    before = draws()[3:]
    with seeded(value):
        got = draws()
    assert got == expected
    assert draws()[3:] == before  # the environment and cuDNN flags are restored afterwards


def test_seeded_restores_the_callers_rng_streams():
    torch.manual_seed(5), np.random.seed(5), random.seed(5)
    expected = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    torch.manual_seed(5), np.random.seed(5), random.seed(5)
    with seeded(123):
        torch.rand(10), np.random.rand(10), random.random()
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == expected


def test_hex_sample_ids_take_upstreams_hash():
    """clonebench's ids are sha256 hex digests, as upstream's: the seed is upstream's pipeline expression."""
    for k in range(50):
        sid = hashlib.sha256(f"pair-{k}".encode()).hexdigest()
        assert scoring_seed(42, sid) == (42 + int(sid[:8], 16)) % (2**32 - 1)
    assert scoring_seed(42, "ffffffff" + "0" * 56) == (42 + 0xFFFFFFFF) % (2**32 - 1) == 42


@pytest.mark.parametrize("sid", ["LibriTTS-121-000039", "", "zz", "pair 7", "é" * 9, "0x", "-"])
def test_other_ids_take_a_documented_deterministic_hash_never_an_error(sid):
    """Where upstream's int(sample_id[:8], 16) would raise, the sha256 of the id gives the hash."""
    expected = int(hashlib.sha256(sid.encode("utf-8")).hexdigest()[:8], 16)
    assert sample_hash(sid) == expected
    assert scoring_seed(42, sid) == (42 + expected) % SEED_MODULUS


def test_ids_that_upstreams_int_accepts_keep_its_value():
    """int() parses more than hex digits (a sign, 0x, underscores, spaces): upstream's value is kept."""
    for sid in ("0x1f", "-12", " ab", "1_2_3", "ABCDEF01"):
        assert sample_hash(sid) == int(sid[:8], 16)
