"""The sha256 of a scorer's source file as its fingerprint records it, unchanged by a move between folders.

A scorer's fingerprint (``evaluate/scoring.py``, ``scorer_provenance``) holds the digest of each of its source files:
any edit makes a new fingerprint, so that records scored by other code are never reused from the cache and
``clonebench compare`` calls runs scored by different code incomparable. Moving modules between folders (issue #39:
Seed-TTS-eval's scorers into ``seedtts/``) edits only the import lines and path mentions of files whose arithmetic is
unchanged. ``MOVED`` maps each such file's digest after the move to its digest before, so that the runs scored before
the move keep their fingerprints (their cache records, their comparability). A later edit of the file gives a digest
not in the table, and the fingerprint changes as it always did; tests/unit/test_source_digest.py then asks for the
stale row to be deleted. No library keeps a content digest across a rename, hence this table.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

# file name -> (its sha256 after the move, its sha256 before): the same code, its imports pointing at the new paths
MOVED: dict[str, tuple[str, str]] = {
    "seedtts_sim.py": ("afb0e5e6c097030fab9be8cead8ebf1ceba7b7d8b7128c0cda00eba22ca73f0d",
                       "2ccd726ca245f428bb4e45264493db93005f131ae250b47eace6b4024521ee38"),
    "seedtts_whisper.py": ("1520105b794b46f5b60a9672c82a4296b56885ccea78d682dfdb889e92771841",
                           "7af277d203dff778180ba96ef919ce302bc1aeed9a9b294b4a598a05baea8305"),
    "seedtts_paraformer.py": ("462908b1b21c1391963152ab9383460b44b066809917f740c5eb1d6456b412fc",
                              "ab073ccc1c7642f61e91f630bcf5a4e0b01904a28a99f259ee52875fc1fca8d4"),
}


def source_digest(path: Path) -> str:
    """``path``'s sha256 (hex); for a moved file still as it was when moved, its digest before the move."""
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    after, before = MOVED.get(Path(path).name, ("", ""))
    return before if digest == after else digest
