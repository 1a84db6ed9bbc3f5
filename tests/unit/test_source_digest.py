"""A scorer fingerprint's source digests survive a move between folders and change with any edit
(evaluate/protocols/source_digest.py)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from clonebench.evaluate.protocols import registry
from clonebench.evaluate.protocols.source_digest import MOVED, source_digest


def _scorer_sources() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for key in registry.SCORERS:
        group, _, backend = key.partition("/")
        for path in registry.scorer_class(group, backend or "openai_whisper").source_files():
            out[Path(path).name] = Path(path)
    return out


def test_every_moved_row_is_a_scorer_source_as_it_was_moved():
    sources = _scorer_sources()
    for name, (after, _before) in MOVED.items():
        assert name in sources, f"{name} is no scorer's source file: delete its row in evaluate/protocols/source_digest.py"
        digest = hashlib.sha256(sources[name].read_bytes()).hexdigest()
        assert digest == after, (f"{sources[name]} changed since it was moved, so its fingerprint changes anyway: "
                                 "delete its row in evaluate/protocols/source_digest.py's MOVED")


def test_a_moved_file_keeps_its_digest_and_an_edit_changes_it(tmp_path):
    sources = _scorer_sources()
    name, (after, before) = next(iter(MOVED.items()))
    copy = tmp_path / name
    shutil.copyfile(sources[name], copy)
    assert source_digest(copy) == before != after
    copy.write_bytes(copy.read_bytes() + b"# edited\n")
    assert source_digest(copy) == hashlib.sha256(copy.read_bytes()).hexdigest() not in (before, after)
    other = tmp_path / "other.py"
    shutil.copyfile(sources[name], other)  # the same bytes under another name are not the moved file
    assert source_digest(other) == after
