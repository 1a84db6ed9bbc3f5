"""A checked folder of WAVs made outside clonebench, recorded as a generation run.

The run directory gets what a generate phase writes (``generated_audio/<speaker>/<sample_id>.wav`` copies of the
usable files, the fsync'd journal, ``run_manifest.json``), so the evaluate phase, the metric cache, ``clonebench
status``, ``report`` and ``compare`` treat it as any generated run. Its provenance is the folder and every file's
sha256; there is no server, so ``generation_provenance`` says "generated outside clonebench: no service
provenance", the seed policy is ``external`` (unknown) and no request was sent. An id whose file failed the
check (``clonebench.external.submitted``) is a ``generation_failed`` sample whose error class is the problem kind.
"""

from __future__ import annotations

from pathlib import Path

from clonebench.core.hashing import sha256_bytes
from clonebench.core.untrusted import UntrustedFileError, read_bytes
from clonebench.data.identity import digest
from clonebench.external.pair_sets import PairSet
from clonebench.external.submitted import MAX_BYTES, FolderCheck
from clonebench.generate.recorder import RunRecorder

EXTERNAL_NOTE = "generated outside clonebench: no service provenance"
SEED_POLICY = "external"


def record_external(run_dir: Path, header: dict, pair_set: PairSet, check: FolderCheck) -> RunRecorder:
    """Write ``run_dir`` as the generation run of ``check``'s folder; returns the finished recorder."""
    recorder = RunRecorder(run_dir, header)
    recorder.seeds_sent = False
    samples = list(pair_set.samples)
    recorder.set_samples(samples)
    files = {}
    for entry in check.files:
        if not entry.ok:
            recorder.failed(entry.sample, entry.kind, entry.problem, 0)
            continue
        try:  # read again as checked: confined to the folder, a regular file, bounded (core/untrusted.py)
            data = read_bytes(entry.path, max_bytes=MAX_BYTES, within=check.folder, what="submitted file")
        except UntrustedFileError as exc:
            recorder.failed(entry.sample, "changed", f"{exc} (it changed after it was checked)", 0)
            continue
        if sha256_bytes(data) != entry.sha256:
            recorder.failed(entry.sample, "changed", f"{entry.path} changed after it was checked (sha256 differs); "
                                                     "score again with --resume once the folder is final", 0)
            continue
        recorder.save_external(entry.sample, data, entry.info)
        files[entry.output_id] = {"file": str(entry.path.relative_to(check.folder)), "sha256": entry.sha256,
                                  "bytes": len(data)}
    fields = {"kind": "external_folder", "task": pair_set.task,
              "files_sha256": digest(sorted((oid, f["sha256"]) for oid, f in files.items()))}
    summary = {k: v for k, v in check.as_dict().items() if k != "files"}
    recorder.finish_unrequested(fields, {"protocol": "external", "note": EXTERNAL_NOTE, "folder": str(check.folder),
                                         "task": pair_set.task, "files": files, "check": summary},
                                seed=None, seed_policy=SEED_POLICY, seed_honoured=None, pair_set=pair_set.origin)
    return recorder
