"""The metric cache: one JSON record per (scorer fingerprint, target sha, generated sha, text, language, sample id).

The scorer fingerprint covers the scorer's version, code, packages, assets, precision and execution (device,
torch/CUDA/cuDNN, GPU, and the CPU thread count where it changes the numbers: evaluate/scoring.py), so a cached
score is never reused on another device or precision, or where another thread count would change it.
Records live in the run's ``metric_cache/`` (the run is self-contained) and in a shared store under
``paths.results_dir/.cache/metric_cache`` so that scoring the same audio again, in a resumed or a new run, is a
cache hit. Failed records are not cached: they are retried.

The shared store outlives clonebench versions, disks and NFS mounts, so nothing read from it is trusted: a record
is used only when it is a regular file (no symlink, FIFO or directory) of at most ``MAX_RECORD_BYTES``, UTF-8
JSON, an object with exactly ``RECORD_FIELDS`` of the right types, of this ``SCHEMA`` version, whose key matches
its path and the item asked for (scorer fingerprint, sample id, both audio hashes, language), whose values match
their checksum and pass the scorer group's rules (``validity.record_problem``). Anything else (or an
unreadable file) is a miss: rescored, rewritten, and counted by reason so that the evaluate phase logs one line
per scorer group. A record that cannot be written is counted the same way; the cache never stops a run, except
a full disk under the run directory itself.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from pathlib import Path

from clonebench.core.atomic import atomic_write_json, is_disk_full
from clonebench.core.redact import redact_value
from clonebench.core.untrusted import UntrustedFileError, read_bytes
from clonebench.data.identity import digest
from clonebench.evaluate.protocols.base import ScoreItem, ScoreRecord
from clonebench.evaluate.protocols.registry import PROMPT_GROUPS
from clonebench.evaluate.protocols.validity import record_problem

SCHEMA = "clonebench.metric_cache/v2"  # v1 records (no schema field) are misses
MAX_RECORD_BYTES = 1 << 20  # a record holds a few numbers and one transcript; anything bigger is not one
RECORD_FIELDS = {"schema": str, "key": str, "scorer_fingerprint": str, "sample_id": str, "target_sha256": str,
                 "generated_sha256": str, "language": str, "values": dict, "values_sha256": str}


def record_key(fingerprint: str, item: ScoreItem, prompt: bool = False) -> str:
    """The record's key; ``prompt``: the scorer reads the pair's prompt (its clip, transcript and language join)."""
    key = {"scorer": fingerprint, "target_sha256": item.target_sha256, "generated_sha256": item.generated_sha256,
           "text": item.target_text, "language": item.language, "sample_id": item.sample_id}
    if prompt:
        key["prompt"] = [item.prompt_sha256, item.prompt_text, item.prompt_language]
    return digest(key)


class Damage(Exception):
    """Why a stored record is not used (its reason is the log's category)."""


def _read_bytes(path: Path) -> bytes | None:
    """The file's bytes; None when there is no entry at all; Damage for anything but a small regular file.

    Read through the one opener of untrusted files (core/untrusted.py) with ``follow=False``: a symlink is never
    followed (it could point anywhere, e.g. at /dev/zero), and a FIFO placed where a record should be does not
    hang. Its refusals become this log's categories."""
    try:
        return read_bytes(path, max_bytes=MAX_RECORD_BYTES, follow=False, what="metric cache record")
    except UntrustedFileError as exc:
        if exc.reason == "missing":
            return None
        if exc.reason == "a symbolic link":
            raise Damage("a symlink, not a record") from None
        if exc.reason.startswith("not a regular file"):
            raise Damage("not a regular file") from None
        if exc.reason.startswith("too large"):
            raise Damage(f"larger than {MAX_RECORD_BYTES} bytes") from None
        raise Damage(exc.reason) from None


def _parse(raw: bytes) -> dict:
    import json

    if not raw.strip():
        raise Damage("empty")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Damage("not UTF-8") from None
    try:
        payload = json.loads(text)
    except (ValueError, RecursionError):  # truncated, not JSON, absurdly nested
        raise Damage("not JSON (truncated or overwritten)") from None
    if not isinstance(payload, dict):
        raise Damage("not a JSON object")
    return payload


def _check(payload: dict, key: str, fingerprint: str, item: ScoreItem, group: str, metrics: tuple[str, ...]) -> None:
    if payload.get("schema") != SCHEMA:
        raise Damage("another schema version" if "schema" in payload else "an old record without a schema version")
    missing, extra = sorted(set(RECORD_FIELDS) - set(payload)), sorted(set(payload) - set(RECORD_FIELDS))
    if missing or extra:
        raise Damage("fields missing or unexpected")
    for name, kind in RECORD_FIELDS.items():
        if not isinstance(payload[name], kind):
            raise Damage("a field of the wrong type")
    if payload["key"] != key:
        raise Damage("its key does not match its path")
    if payload["scorer_fingerprint"] != fingerprint:
        raise Damage("another scorer fingerprint")
    if payload["sample_id"] != item.sample_id:
        raise Damage("another sample id")
    if (payload["target_sha256"], payload["generated_sha256"], payload["language"]) != (
            item.target_sha256, item.generated_sha256, item.language):
        raise Damage("other audio or language than its key")
    if payload["values_sha256"] != digest(payload["values"]):
        raise Damage("values that do not match their checksum")
    if record_problem(group, metrics, payload["values"]) is not None:
        raise Damage("values that are not valid scores")


class MetricCache:
    def __init__(self, run_dir: Path | None, shared_dir: Path | None):
        # run_dir None: no run-local copy (the Python API scores files, not a run)
        self.local = Path(run_dir) / "metric_cache" if run_dir is not None else None
        self.shared = Path(shared_dir) if shared_dir else None
        self.hits = 0
        self.misses = 0
        self.damaged: dict[str, Counter] = {}      # group -> reason -> records not trusted
        self.unwritable: dict[str, Counter] = {}   # group -> reason -> records that could not be written
        self.examples: dict[tuple[int, str], str] = {}  # (table, group) -> one path, for the log
        self._count = threading.Lock()  # scorer groups may run on two threads (evaluate/execution/overlap.py)

    def _path(self, root: Path, group: str, key: str) -> Path:
        return root / group / key[:2] / f"{key}.json"

    def _note(self, table: dict[str, Counter], group: str, reason: str, path: Path) -> None:
        with self._count:
            table.setdefault(group, Counter())[reason] += 1
            self.examples.setdefault((id(table), group), str(path))

    def lookup(self, group: str, fingerprint: str, item: ScoreItem, metrics: tuple[str, ...]) -> ScoreRecord | None:
        """The trusted cached record of ``item`` for this scorer, or None (a miss: score it and ``store``)."""
        key = record_key(fingerprint, item, group in PROMPT_GROUPS)
        for root in (self.local, self.shared):
            if root is None:
                continue
            path = self._path(root, group, key)
            try:
                raw = _read_bytes(path)
                if raw is None:
                    continue
                payload = _parse(raw)
                _check(payload, key, fingerprint, item, group, metrics)
            except Damage as damage:
                self._note(self.damaged, group, str(damage), path)
                continue
            if root is not self.local and self.local is not None:
                self._write(self._path(self.local, group, key), payload, group, local=True)
            with self._count:
                self.hits += 1
            return ScoreRecord(item.sample_id, payload["values"])
        with self._count:
            self.misses += 1
        return None

    def store(self, group: str, fingerprint: str, item: ScoreItem, record: ScoreRecord,
              metrics: tuple[str, ...]) -> None:
        """Cache a valid record in the run's cache and the shared one (failed or invalid records are not cached)."""
        if not record.ok:
            return
        values = redact_value(record.values)  # as every JSON file is written: the checksum covers what is stored
        if record_problem(group, metrics, values) is not None:
            self._note(self.unwritable, group, "values that would not be trusted when read back",
                       (self.local or self.shared or Path(".")) / group)
            return
        key = record_key(fingerprint, item, group in PROMPT_GROUPS)
        payload = {"schema": SCHEMA, "key": key, "scorer_fingerprint": fingerprint, "sample_id": item.sample_id,
                   "target_sha256": item.target_sha256, "generated_sha256": item.generated_sha256,
                   "language": item.language, "values": values, "values_sha256": digest(values)}
        for root in (self.local, self.shared):
            if root is not None:
                self._write(self._path(root, group, key), payload, group, local=root is self.local)

    def _write(self, path: Path, payload: dict, group: str, local: bool) -> None:
        try:
            atomic_write_json(path, payload)
        except OSError as exc:
            if local and is_disk_full(exc):
                raise  # the run directory itself is full: its outputs cannot be written either
            reason = os.strerror(exc.errno) if exc.errno else type(exc).__name__
            self._note(self.unwritable, group, f"not written ({reason})", path)

    def report(self, group: str, damaged: bool) -> list[str]:
        """One line for the records of ``group`` that were not trusted (``damaged``) or could not be written."""
        table = self.damaged if damaged else self.unwritable
        counts = table.get(group)
        if not counts:
            return []
        what = "not trusted (rescored and rewritten)" if damaged else "could not be cached"
        reasons = ", ".join(f"{n} {reason}" for reason, n in counts.most_common())
        return [f"metric cache, {group}: {sum(counts.values())} record(s) {what}: {reasons} "
                f"(e.g. {self.examples.get((id(table), group))})"]


def count_records(run_dir: Path, group: str, fingerprint: str) -> int:
    """Records of scorer ``fingerprint`` in the run's own cache (what a killed evaluation had durably scored or
    copied from the shared cache); damaged files are not counted."""
    count = 0
    for path in (Path(run_dir) / "metric_cache" / group).glob("*/*.json"):
        try:
            raw = _read_bytes(path)
            payload = _parse(raw) if raw is not None else {}
        except Damage:
            continue
        count += payload.get("schema") == SCHEMA and payload.get("scorer_fingerprint") == fingerprint
    return count
