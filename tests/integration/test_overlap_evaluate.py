"""Scores do not depend on the schedule: MCD and DNSMOS overlapped with ECAPA and Whisper (one run) equal
the same groups scored alone (no overlap), value for value."""

from __future__ import annotations

import csv

from tests.integration.test_evaluate_phase import _evaluate_only, scored  # noqa: F401 (fixture)


def _rows(result):
    with open(result.run_dir / "generation_sample_metrics.csv", newline="") as handle:
        return {r["sample_id"]: r for r in csv.DictReader(handle)}


def test_overlapped_groups_equal_groups_scored_alone(scored, demo_dataset):  # noqa: F811
    tmp, _ = scored
    together = _rows(_evaluate_only(tmp, demo_dataset, "together", "evaluation.metrics=[sim,sva,wer,mcd,dnsmos]",
                                    "evaluation.cache_dir=null"))
    alone = {}
    for metric in ("mcd", "dnsmos", "sim"):
        for sample_id, row in _rows(_evaluate_only(tmp, demo_dataset, f"alone_{metric}", f"evaluation.metrics=[{metric}]",
                                                   "evaluation.cache_dir=null")).items():
            alone.setdefault(sample_id, {}).update({k: v for k, v in row.items() if v != ""})
    assert together and set(together) == set(alone)
    for sample_id, row in together.items():
        for metric in ("mcd", "dnsmos", "dnsmos_sig", "dnsmos_bak", "dnsmos_p808", "sim", "sva"):
            assert row[metric] != "" and row[metric] == alone[sample_id][metric], (sample_id, metric)
