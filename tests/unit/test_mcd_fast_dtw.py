"""The compiled fastdtw in mcd_fast gives fastdtw's own path, bit for bit, including its tie-breaking."""

from __future__ import annotations

import numpy as np
import pytest
from fastdtw import fastdtw
from scipy.spatial.distance import euclidean

from clonebench.evaluate.scorers.mcd_fast import fastdtw_path


def _reference(x, y):
    return np.asarray(fastdtw(x, y, dist=euclidean)[1], dtype=np.int64)


@pytest.mark.parametrize("nx,ny", [(1, 1), (1, 5), (2, 2), (3, 2), (3, 3), (4, 7), (17, 9), (64, 65),
                                   (101, 37), (250, 301), (513, 480)])
def test_random_sequences_same_path(nx, ny):
    rng = np.random.default_rng(nx * 1000 + ny)
    x, y = rng.normal(size=(nx, 13)), rng.normal(size=(ny, 13))
    assert np.array_equal(fastdtw_path(x, y), _reference(x, y))


@pytest.mark.parametrize("seed", range(6))
def test_ties_broken_as_fastdtw_breaks_them(seed):
    # small integer features make equal costs common: the first of (i-1, j), (i, j-1), (i-1, j-1) must win
    rng = np.random.default_rng(seed)
    nx, ny = rng.integers(5, 90, size=2)
    x = rng.integers(0, 2, size=(nx, 13)).astype(float)
    y = rng.integers(0, 2, size=(ny, 13)).astype(float)
    assert np.array_equal(fastdtw_path(x, y), _reference(x, y))


def test_strided_columns_as_pymcd_passes_them():
    # pymcd passes mcep[:, 1:], a non-contiguous view
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=(140, 14)), rng.normal(size=(95, 14))
    assert np.array_equal(fastdtw_path(a[:, 1:], b[:, 1:]), _reference(a[:, 1:], b[:, 1:]))
