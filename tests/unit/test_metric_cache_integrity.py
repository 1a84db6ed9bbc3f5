"""The metric cache trusts nothing it reads: every kind of damaged record (bytes, JSON shape, schema version,
identity, values) is a miss counted by reason, never a crash and never a value; the rescored record is then
rewritten and trusted again. The records here are real: written by ``MetricCache.store`` and then damaged on disk.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from clonebench.data.identity import digest
from clonebench.evaluate.execution.cache import MAX_RECORD_BYTES, SCHEMA, MetricCache, record_key
from clonebench.evaluate.protocols.base import ScoreItem, ScoreRecord
from clonebench.evaluate.protocols.transcript import score_transcript
from clonebench.evaluate.scorers.whisper_common import Heard

FP = "f" * 64
OTHER_FP = "e" * 64
GROUP_METRICS = {"whisper": ("wer",), "ecapa": ("sim", "sva"), "emotion": ("emotion_match", "emotion_target",
                                                                           "emotion_generated")}


def _item(n: int) -> ScoreItem:
    return ScoreItem(sample_id=f"{n:064x}", pair_id=f"p{n}", speaker_id="s", generated_path=Path(f"/g{n}.wav"),
                     generated_sha256=f"{n + 100:064x}", target_path=Path(f"/t{n}.wav"), target_sha256=f"{n + 200:064x}",
                     target_text="The quick brown fox.", language="EN")


def _values(group: str) -> dict:
    if group == "whisper":
        # what the WER scorer records (evaluate/protocols/transcript.py): hypothesis, text rule, WER and CER with edit counts,
        # and what Whisper's decoding says of the clip (whisper_common.Heard)
        return {**score_transcript("The quick brown fox.", "the quick brown box", "en", "ascii_punctuation_removed_v2"),
                **Heard("the quick brown box", -0.2, 0.01, "en", 0.97, 0.97).values()}
    if group == "emotion":
        return {"emotion_match": 1.0, "emotion_target": "neu", "emotion_generated": "neu"}
    return {"sim": 0.61, "sva": 1.0}


def _edit(payload_edit):
    """Damage made by rewriting the stored JSON object (the checksum is kept unless the edit recomputes it)."""
    def damage(path: Path, item: ScoreItem, cache: MetricCache) -> None:
        payload = json.loads(path.read_text())
        payload_edit(payload)
        path.write_text(json.dumps(payload))
    return damage


def _values_edit(values_edit, keep_checksum=False):
    """Damage to the values, with a recomputed checksum (only the values' rules can catch it) unless kept."""
    def edit(payload):
        values_edit(payload["values"])
        if not keep_checksum:
            payload["values_sha256"] = digest(payload["values"])
    return _edit(edit)


def _bytes(data: bytes):
    def damage(path: Path, item, cache):
        path.write_bytes(data)
    return damage


def _raw(make):
    def damage(path: Path, item, cache):
        path.write_bytes(make(path.read_bytes()))
    return damage


def _replace(make_node):
    def damage(path: Path, item, cache):
        path.unlink()
        make_node(path)
    return damage


def _other_items_record(path: Path, item, cache):
    other = _item(99)
    cache.store("whisper", FP, other, ScoreRecord(other.sample_id, _values("whisper")), GROUP_METRICS["whisper"])
    other_path = cache._path(cache.local, "whisper", record_key(FP, other))
    path.write_bytes(other_path.read_bytes())


def _old_v1_record(path: Path, item, cache):
    key = record_key(FP, item)
    path.write_text(json.dumps({"key": key, "scorer_fingerprint": FP, "sample_id": item.sample_id,
                                "values": _values("whisper"), "error": None}))


def _set(name, value):
    return _edit(lambda p: p.__setitem__(name, value))


# (case, damage, reason counted): one damaged record each
CASES = [
    ("truncated", _raw(lambda b: b[: len(b) // 2]), "not JSON"),
    ("truncated to one byte", _raw(lambda b: b[:1]), "not JSON"),
    ("empty", _bytes(b""), "empty"),
    ("whitespace only", _bytes(b" \n\t\n"), "empty"),
    ("binary garbage", _bytes(bytes(range(256)) * 4), "not UTF-8"),
    ("not UTF-8 but JSON-like", _raw(lambda b: b.replace(b"quick", b"qu\xffck")), "not UTF-8"),
    ("NUL bytes (a file zeroed by a crash)", _raw(lambda b: b"\x00" * len(b)), "not JSON"),
    ("JSON array", _bytes(b"[1, 2, 3]"), "not a JSON object"),
    ("JSON null", _bytes(b"null"), "not a JSON object"),
    ("JSON string", _bytes(b'"values"'), "not a JSON object"),
    ("deeply nested", _bytes(b"[" * 200_000 + b"]" * 200_000), "not JSON"),
    ("over the size limit", _raw(lambda b: b[:-2] + b" " * (MAX_RECORD_BYTES + 10) + b"}\n"), "larger than"),
    ("old record without schema", _old_v1_record, "without a schema version"),
    ("another schema version", _set("schema", "clonebench.metric_cache/v1"), "another schema version"),
    ("a field missing", _edit(lambda p: p.pop("values_sha256")), "fields missing or unexpected"),
    ("the sample id missing", _edit(lambda p: p.pop("sample_id")), "fields missing or unexpected"),
    ("an extra field", _set("error", None), "fields missing or unexpected"),
    ("key of the wrong type", _set("key", 12345), "wrong type"),
    ("values a list", _set("values", [0.5, 1.0]), "wrong type"),
    ("values a string", _set("values", "0.5"), "wrong type"),
    ("language null", _set("language", None), "wrong type"),
    ("key not matching its path", _set("key", "0" * 64), "does not match its path"),
    ("another item's record at this path", _other_items_record, "does not match its path"),
    ("another sample id", _set("sample_id", "1" * 64), "another sample id"),
    ("another scorer fingerprint", _set("scorer_fingerprint", OTHER_FP), "another scorer fingerprint"),
    ("another generated sha256", _set("generated_sha256", "2" * 64), "other audio"),
    ("another language", _set("language", "FR"), "other audio"),
    ("a value changed, old checksum", _values_edit(lambda v: v.__setitem__("wer", 0.0), keep_checksum=True),
     "checksum"),
    ("a metric missing", _values_edit(lambda v: v.pop("wer")), "not valid scores"),
    ("an edit count missing", _values_edit(lambda v: v.pop("wer_edits")), "not valid scores"),
    ("the hypothesis missing", _values_edit(lambda v: v.pop("hypothesis")), "not valid scores"),
    ("an extra value", _values_edit(lambda v: v.__setitem__("sim", 0.5)), "not valid scores"),
    ("a value as a string", _values_edit(lambda v: v.__setitem__("wer", "0.25")), "not valid scores"),
    ("a value null", _values_edit(lambda v: v.__setitem__("wer", None)), "not valid scores"),
    ("a value true", _values_edit(lambda v: v.__setitem__("wer", True)), "not valid scores"),
    ("a count as a float", _values_edit(lambda v: v.__setitem__("wer_edits", 1.0)), "not valid scores"),
    ("a negative count", _values_edit(lambda v: v.__setitem__("wer_deletions", -1)), "not valid scores"),
    ("a hypothesis as a number", _values_edit(lambda v: v.__setitem__("hypothesis", 3)), "not valid scores"),
    ("a negative wer", _values_edit(lambda v: v.__setitem__("wer", -0.25)), "not valid scores"),
    ("a count no float can hold", _values_edit(lambda v: v.__setitem__("wer_edits", 10 ** 400)), "not valid scores"),
    ("a wer no float can hold", _values_edit(lambda v: v.__setitem__("wer", 10 ** 400)), "not valid scores"),
    ("values nested", _values_edit(lambda v: v.__setitem__("wer", {"value": 0.25})), "not valid scores"),
    ("NaN", _raw(lambda b: _nan_record(b)), "not valid scores"),
    ("Infinity", _raw(lambda b: _nan_record(b, "Infinity")), "not valid scores"),
    ("1e999", _raw(lambda b: _nan_record(b, "1e999")), "not valid scores"),
    ("a directory at the record's path", _replace(lambda p: p.mkdir()), "not a regular file"),
    ("a FIFO at the record's path", _replace(lambda p: os.mkfifo(p)), "not a regular file"),
    ("a symlink to /dev/zero", _replace(lambda p: p.symlink_to("/dev/zero")), "symlink"),
    ("a dangling symlink", _replace(lambda p: p.symlink_to(p.parent / "nowhere")), "symlink"),
    ("a symlink loop", _replace(lambda p: p.symlink_to(p)), "symlink"),
]


def _nan_record(raw: bytes, literal: str = "NaN") -> bytes:
    """The stored record with ``wer`` replaced by a JSON literal Python reads as a non-finite float, and a checksum
    that matches (so that only the values' rules can refuse it)."""
    payload = json.loads(raw)
    payload["values"]["wer"] = "__X__"
    values = json.loads(json.dumps(payload["values"]).replace('"__X__"', literal))
    payload["values_sha256"] = digest(values)
    return json.dumps(payload).replace('"__X__"', literal).encode()


@pytest.mark.parametrize("case, damage, reason", CASES, ids=[c[0] for c in CASES])
def test_a_damaged_record_is_a_counted_miss_then_rewritten(tmp_path, case, damage, reason):
    cache = MetricCache(tmp_path / "run", None)
    item, values = _item(1), _values("whisper")
    cache.store("whisper", FP, item, ScoreRecord(item.sample_id, values), GROUP_METRICS["whisper"])
    path = cache._path(cache.local, "whisper", record_key(FP, item))
    assert cache.lookup("whisper", FP, item, GROUP_METRICS["whisper"]).values == values
    damage(path, item, cache)
    assert cache.lookup("whisper", FP, item, GROUP_METRICS["whisper"]) is None  # never a crash, never trusted
    counted = cache.damaged["whisper"]
    assert sum(counted.values()) == 1 and reason in next(iter(counted)), counted
    # rescored: the record is written again (replacing a file, symlink or FIFO; a directory stays in the way)
    cache.store("whisper", FP, item, ScoreRecord(item.sample_id, values), GROUP_METRICS["whisper"])
    found = cache.lookup("whisper", FP, item, GROUP_METRICS["whisper"])
    if case.startswith("a directory"):
        assert found is None and sum(cache.unwritable["whisper"].values()) == 1
    else:
        assert found is not None and found.values == values and not cache.unwritable


def test_a_good_shared_record_repairs_a_damaged_local_one(tmp_path):
    cache = MetricCache(tmp_path / "run", tmp_path / "shared")
    item = _item(2)
    cache.store("ecapa", FP, item, ScoreRecord(item.sample_id, _values("ecapa")), GROUP_METRICS["ecapa"])
    local = cache._path(cache.local, "ecapa", record_key(FP, item))
    local.write_bytes(b"{")
    assert cache.lookup("ecapa", FP, item, GROUP_METRICS["ecapa"]).values == _values("ecapa")
    assert json.loads(local.read_text())["schema"] == SCHEMA  # rewritten from the shared copy
    assert sum(cache.damaged["ecapa"].values()) == 1


def test_values_out_of_range_for_their_scorer_are_never_trusted(tmp_path):
    cache = MetricCache(tmp_path / "run", None)
    for n, (group, change) in enumerate([("ecapa", {"sim": 1.5}), ("ecapa", {"sva": 0.5}), ("ecapa", {"sva": 2.0}),
                                         ("emotion", {"emotion_match": 0.5}), ("emotion", {"emotion_target": None})]):
        item = _item(10 + n)
        cache.store(group, FP, item, ScoreRecord(item.sample_id, _values(group)), GROUP_METRICS[group])
        path = cache._path(cache.local, group, record_key(FP, item))
        _values_edit(lambda v: v.update(change))(path, item, cache)
        assert cache.lookup(group, FP, item, GROUP_METRICS[group]) is None
    assert sum(cache.damaged["ecapa"].values()) == 3 and sum(cache.damaged["emotion"].values()) == 2


def test_a_record_that_would_not_be_trusted_is_not_written(tmp_path):
    cache = MetricCache(tmp_path / "run", None)
    item = _item(3)
    cache.store("whisper", FP, item, ScoreRecord(item.sample_id, {"wer": 0.5}), GROUP_METRICS["whisper"])
    assert not (tmp_path / "run" / "metric_cache").exists()
    assert sum(cache.unwritable["whisper"].values()) == 1


def test_an_unwritable_shared_cache_is_reported_not_raised(tmp_path):
    shared = tmp_path / "shared"
    shared.write_text("a file where the shared cache folder should be")
    cache = MetricCache(tmp_path / "run", shared)
    item = _item(4)
    cache.store("ecapa", FP, item, ScoreRecord(item.sample_id, _values("ecapa")), GROUP_METRICS["ecapa"])
    assert cache.lookup("ecapa", FP, item, GROUP_METRICS["ecapa"]) is not None  # the run's own copy
    (line,) = cache.report("ecapa", damaged=False)
    assert "1 record(s) could not be cached" in line and str(shared) in line


def test_damage_is_reported_once_per_group_with_counts(tmp_path):
    cache = MetricCache(tmp_path / "run", None)
    items = [_item(20 + n) for n in range(6)]
    for item in items:
        cache.store("ecapa", FP, item, ScoreRecord(item.sample_id, _values("ecapa")), GROUP_METRICS["ecapa"])
    paths = [cache._path(cache.local, "ecapa", record_key(FP, i)) for i in items]
    paths[0].write_bytes(b"")
    paths[1].write_bytes(b"")
    paths[2].write_bytes(b"\xff\xfe")
    assert [cache.lookup("ecapa", FP, i, GROUP_METRICS["ecapa"]) is None for i in items] == [True] * 3 + [False] * 3
    (line,) = cache.report("ecapa", damaged=True)
    assert "3 record(s) not trusted" in line and "2 empty" in line and "1 not UTF-8" in line
    assert cache.report("whisper", damaged=True) == []


def test_the_evaluate_phase_logs_damage_once_per_group(tmp_path, caplog):
    """run_group with a real scorer (MCD) over records damaged in three ways: one warning line, values unchanged."""
    from types import SimpleNamespace

    import numpy as np
    import soundfile as sf

    from clonebench.core.hashing import HashCache
    from clonebench.evaluate.scoring import run_group
    from tests.conftest import score_item

    rng = np.random.default_rng(0)
    items = []
    for n in range(4):
        for role in ("g", "t"):
            sf.write(tmp_path / f"{role}{n}.wav", (0.1 * rng.standard_normal(8000)).astype("float32"), 16000)
        items.append(score_item(tmp_path / f"g{n}.wav", tmp_path / f"t{n}.wav", sample_id=f"{n:064x}"))
    settings = SimpleNamespace(evaluation=SimpleNamespace(scorer_options={"mcd": {}, "whisper": {"backend": "x"}},
                                                          batch_size=2))
    cache = MetricCache(tmp_path / "run", tmp_path / "shared")
    provenance, first = run_group("mcd", settings, "cpu", items, cache, HashCache(None))
    records = sorted((tmp_path / "shared" / "mcd").rglob("*.json"))
    assert len(records) == 4
    records[0].write_bytes(b"")
    records[1].write_text("[]")
    _values_edit(lambda v: v.__setitem__("mcd", -1.0))(records[2], None, None)
    caplog.set_level(logging.WARNING)
    again = MetricCache(tmp_path / "run2", tmp_path / "shared")
    provenance, second = run_group("mcd", settings, "cpu", items, again, HashCache(None))
    assert {k: r.values for k, r in second.items()} == {k: r.values for k, r in first.items()}
    assert provenance["cached"] == 1 and provenance["scored"] == 3
    lines = [r.getMessage() for r in caplog.records if "metric cache" in r.getMessage()]
    assert len(lines) == 1 and "3 record(s) not trusted" in lines[0], lines
    # rewritten: a third evaluation finds every record good
    third = MetricCache(tmp_path / "run3", tmp_path / "shared")
    provenance, _ = run_group("mcd", settings, "cpu", items, third, HashCache(None))
    assert provenance["cached"] == 4 and not third.damaged
