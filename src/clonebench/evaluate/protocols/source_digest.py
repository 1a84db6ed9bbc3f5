"""The sha256 of a scorer's source file as its fingerprint records it, unchanged by a move between folders.

A scorer's fingerprint (``evaluate/scoring.py``, ``scorer_provenance``) holds the digest of each of its source
files: any edit makes a new fingerprint, so that records scored by other code are never reused from the cache and
``clonebench compare`` calls runs scored by different code incomparable. Moving modules between folders (issue #39:
Seed-TTS-eval's scorers into ``seedtts/``, ``evaluate/`` grouped into ``protocols/`` and ``execution/``) edits only
the import lines and path mentions of files whose arithmetic is unchanged. ``MOVED`` maps each such file's digest
after the move to its digest before, so that the runs scored before the move keep their fingerprints (their cache
records, their comparability). A later edit of the file gives a digest not in the table, and the fingerprint changes
as it always did; tests/unit/test_source_digest.py then asks for the stale row to be deleted. No library keeps a
content digest across a rename, hence this table.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

# file name -> (its sha256 after the move, its sha256 before): the same code, its imports pointing at the new paths
MOVED: dict[str, tuple[str, str]] = {
    "base.py": ("52ee58fd8cb4afb29651fb26e5ebe80e0a9d0555bcac0454c33692fb9da4d450",
                "c3fdf5e4f4436e5d4546fa123d15cf2ab64e179e2a496cabf755f11744f3a1a1"),
    "dnsmos.py": ("e33b492f6ba5158467b73f4bf2f105b1ec38105413aff34ebb9e8537ba617eb2",
                  "4de667760c009e572d41ef23afe565395a498eecf0aaa2ad684a54268f79bf48"),
    "dnsmos_batched.py": ("19cf21f2f63d04f667a4e84ea9c1894bef3cde40b14f6ef17f21aa12d60e8f49",
                          "925c5001c8c3fc3e944696d89cdf303bd757d0890d4728bcb72c694cc517d4d2"),
    "emotion.py": ("e76f76705023fae3a64f1289300f6df3e24ac479a6718d487821672c7d60230c",
                   "06957b3f73cdca9d733eadbdac5c4ef45b6b4718c21a5997ac0cddd0d29f683b"),
    "failures.py": ("1af23e3a660fb3904ef32b1aee5adb212c350760786b4a0302a21dcde4490f09",
                    "c556268b12f7d09b31dea4563347e197b368ca0a1fba1f299a8e903aa25776a7"),
    "mcd.py": ("003a3bd367b189c4ddc7a113d7bacbc1fb5b8c9592329cc48f62b8dd30de5746",
               "3c3813a3479db76508a32c3486457a6ca420bd8ed0777a3c3af02d652c1d87a8"),
    "stoi.py": ("0e6fb9d9e698aa68d91a37df1ca02b28145f2e947a1a189a08cdbdfef30ff581",
                "dd67ffb9252cdc15818ced939fc47acb85ae1c9cff4fbc75411e1c666a722214"),
    "transcript.py": ("2d11b0beb26c8c9a9186546581b48b1ea9b8dab5b31cb6079fd8a0ff45bca066",
                      "64e0f2fed09851aef434c9505a8ae7798eba92fc40af69c8d224f743d41306a9"),
    "utmos.py": ("b6e120c8c9f019a0aaecd8e2d6e0ddff74fad466fe894300c0ff44320c5368c5",
                 "9d8f882a9cc283d0ffc3db224c143604de2a594c5022791d432b77777e61f3cc"),
    "whisper_common.py": ("b9f67bb3b77e3d1cd596c9a029d3419e228790d106cb08f2e4b4e5f0bf4eb309",
                          "33cacc1db94295486ec4e25049802cd0be037d4db6f0956925def482b9cfb157"),
    "whisper_faster.py": ("875173c249c50e38d22004c1ac9ac05544ca12f122de5f385485afcda96283a9",
                          "83ba7391ff6f71df37ec5ccfd03f7100b2b4d9cd8d72917f42e0bb63dfbea7d3"),
    "whisper_openai.py": ("9858147e6a1a95e8525639833af82d530dca2b989a7530194a4e1baaa64ea33c",
                          "9400b4b676f2017e490d3874d2705cf731bd2c37b29c41042efd8a5902ca9c2a"),
}


def source_digest(path: Path) -> str:
    """``path``'s sha256 (hex); for a moved file still as it was when moved, its digest before the move."""
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    after, before = MOVED.get(Path(path).name, ("", ""))
    return before if digest == after else digest
