"""Scorer.release: the model is dropped; a full gc.collect runs only when a GPU needs its memory back."""

from __future__ import annotations

import gc

import pytest

from clonebench.core.hashing import HashCache
from clonebench.evaluate.protocols.base import Scorer


class _Probe(Scorer):
    name = "probe"
    metrics = ("x",)
    needs_reference = False
    needs_text = False
    uses_gpu = True
    sample_rate = 16_000

    def version(self):
        return "probe"

    def load(self):
        self._model = object()

    def score_batch(self, items):
        return []

    def protocol(self):
        return {}


def test_cpu_release_drops_the_model_without_a_full_collection(monkeypatch):
    monkeypatch.setattr(gc, "collect", lambda *a: pytest.fail("gc.collect on a CPU scorer's release"))
    scorer = _Probe({}, "cpu", HashCache(None))
    scorer.load()
    scorer.release()
    assert scorer._model is None


def test_gpu_release_collects(monkeypatch):
    calls = []
    monkeypatch.setattr(gc, "collect", lambda *a: calls.append(a) or 0)
    scorer = _Probe({}, "cuda:0", HashCache(None))
    scorer.load()
    scorer.release()
    assert scorer._model is None and calls
