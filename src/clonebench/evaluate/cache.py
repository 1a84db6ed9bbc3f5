"""The metric cache: one JSON record per (scorer fingerprint, target sha, generated sha, text, language, sample id).

The scorer fingerprint covers the scorer's version, code, packages, assets and execution (device,
torch/CUDA/cuDNN, GPU, CPU threads, batch size), so a cached score is never reused on another device
or thread count. Records live in the run's ``metric_cache/`` (the run is self-contained) and in a
shared store under ``paths.results_dir/.cache/metric_cache`` so that scoring the same audio again, in a
resumed or a new run, is a cache hit. Failed records are not cached: they are retried.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from clonebench.atomic import atomic_write_json
from clonebench.data.identity import digest
from clonebench.evaluate.base import ScoreItem, ScoreRecord


def record_key(fingerprint: str, item: ScoreItem) -> str:
    return digest({"scorer": fingerprint, "target_sha256": item.target_sha256, "generated_sha256": item.generated_sha256,
                   "text": item.target_text, "language": item.language, "sample_id": item.sample_id})


class MetricCache:
    def __init__(self, run_dir: Path | None, shared_dir: Path | None):
        # run_dir None: no run-local copy (the Python API scores files, not a run)
        self.local = Path(run_dir) / "metric_cache" if run_dir is not None else None
        self.shared = Path(shared_dir) if shared_dir else None
        self.hits = 0
        self.misses = 0
        self._count = threading.Lock()  # scorer groups may run on two threads (evaluate/overlap.py)

    def _path(self, root: Path, group: str, key: str) -> Path:
        return root / group / key[:2] / f"{key}.json"

    def get(self, group: str, key: str) -> ScoreRecord | None:
        for root in (self.local, self.shared):
            if root is None:
                continue
            path = self._path(root, group, key)
            if path.is_file():
                try:
                    payload = json.loads(path.read_text(encoding="utf-8"))
                except (OSError, json.JSONDecodeError):
                    continue  # a damaged record is a miss, rescored and rewritten
                if payload.get("error") is None and payload.get("key") == key:
                    if root is not self.local and self.local is not None:
                        atomic_write_json(self._path(self.local, group, key), payload)
                    with self._count:
                        self.hits += 1
                    return ScoreRecord(payload["sample_id"], payload["values"])
        with self._count:
            self.misses += 1
        return None

    def put(self, group: str, key: str, record: ScoreRecord, fingerprint: str) -> None:
        if not record.ok:
            return
        payload = {"key": key, "scorer_fingerprint": fingerprint, "sample_id": record.sample_id,
                   "values": record.values, "error": None}
        for root in (self.local, self.shared):
            if root is not None:
                atomic_write_json(self._path(root, group, key), payload)
