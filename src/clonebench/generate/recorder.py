"""The run directory of a generation run: saved audio, the journal and ``run_manifest.json``.

Every state change is journaled first (fsync'd); the manifest is rewritten atomically from the
in-memory state at the start, at the end, and every ``manifest_every`` finished samples, so a crash
leaves a journal that is complete and a manifest that is at most a few samples behind.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from clonebench.core.atomic import atomic_write_bytes, atomic_write_json
from clonebench.core.hashing import sha256_bytes, sha256_file
from clonebench.core.records import Attempt, RunStatus, Sample, SampleOutcome, SampleStatus
from clonebench.core.redact import redact
from clonebench.data.audio import WavInfo
from clonebench.data.identity import digest, input_fingerprint
from clonebench.generate.journal import JOURNAL_NAME, MANIFEST_NAME, Journal

SCHEMA = "clonebench.run/v1"


class RunRecorder:
    def __init__(self, run_dir: Path, header: dict[str, Any], manifest_every_s: float = 5.0):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.header = {"schema": SCHEMA, **header, "run_dir": str(self.run_dir), "created_at": time.time()}
        self.status = RunStatus.RUNNING
        self.samples: list[Sample] = []
        self.outcomes: dict[str, SampleOutcome] = {}
        self.input_failures: list[dict] = []
        self.errors: list[str] = []
        self.extra: dict[str, Any] = {}
        self.manifest_every_s = manifest_every_s  # the journal has every change; the manifest catches up this often
        self.finished = False
        self.seeds_sent = True  # False for servers without a seed (s2.cpp): rows then show no seed
        self._lock = threading.RLock()  # audio is saved from worker threads
        self._last_write = 0.0
        self.write_manifest()  # first, so that a run with a journal always has a manifest too
        self.journal = Journal(self.run_dir / JOURNAL_NAME)
        self.journal.append("run_start", status=self.status.value, run_name=header.get("run_name"))

    # -- samples -------------------------------------------------------------------------------
    def set_samples(self, samples: list[Sample]) -> None:
        self.samples = samples
        for sample in samples:
            self.outcomes[sample.sample_id] = SampleOutcome(sample.sample_id, sample.pair_id, sample.speaker_id,
                                                            SampleStatus.PENDING)

    def record_input_failures(self, bad_rows: dict[int, str], label: str) -> None:
        for row_number, reason in sorted(bad_rows.items()):
            entry = {"row_number": row_number, "status": SampleStatus.INPUT_FAILED.value, "error": reason}
            self.input_failures.append(entry)
            self.journal.append("input", source=label, **entry)

    def _set(self, outcome: SampleOutcome, sync: bool = True) -> None:
        with self._lock:
            self.outcomes[outcome.sample_id] = outcome
            self.journal.append("sample", sync=sync, **outcome.as_dict())
            finished = outcome.status in (SampleStatus.GENERATED, SampleStatus.GENERATION_FAILED)
            if finished and time.monotonic() - self._last_write >= self.manifest_every_s:
                self.write_manifest()

    def generating(self, sample: Sample) -> None:
        self._set(SampleOutcome(sample.sample_id, sample.pair_id, sample.speaker_id, SampleStatus.GENERATING))

    def attempt(self, phase: str, sample_id: str | None, attempt: Attempt, purpose: str = "sample") -> None:
        fields = attempt.as_dict()
        if "endpoint" in fields:
            fields["endpoint"] = redact(fields["endpoint"])
        if "error" in fields:
            fields["error"] = redact(fields["error"])
        self.journal.append(phase, sample_id=sample_id, purpose=purpose, **fields)

    def save_audio(self, sample: Sample, body: bytes, info: WavInfo, attempts: list[Attempt]) -> None:
        rel = sample.audio_relpath()
        atomic_write_bytes(self.run_dir / rel, body)
        self._set(SampleOutcome(
            sample.sample_id, sample.pair_id, sample.speaker_id, SampleStatus.GENERATED, audio_path=rel,
            audio_sha256=sha256_bytes(body), audio_bytes=len(body), sample_rate=info.sample_rate, frames=info.frames,
            channels=info.channels, duration_s=round(info.duration_s, 6),
            synthesis_time_s=round(attempts[-1].duration_s or 0.0, 6), attempts=len(attempts),
            ttfb_s=None if attempts[-1].ttfb_s is None else round(attempts[-1].ttfb_s, 6),
            rtf=round((attempts[-1].duration_s or 0.0) / info.duration_s, 6) if attempts[-1].ttfb_s is not None else None))

    def save_external(self, sample: Sample, body: bytes, info: WavInfo, written: str | None = None) -> None:
        """Save a WAV that was not requested here: no request, no attempt, no synthesis time. A file made outside
        clonebench (``clonebench score``) is written to the sample's place; ``written``: the path, relative to the
        run, where the WAV ``body`` already lies (a derived task's processed clip), recorded as it is."""
        rel = written or sample.audio_relpath()
        if written is None:
            atomic_write_bytes(self.run_dir / rel, body)
        self._set(SampleOutcome(
            sample.sample_id, sample.pair_id, sample.speaker_id, SampleStatus.GENERATED, audio_path=rel,
            audio_sha256=sha256_bytes(body), audio_bytes=len(body), sample_rate=info.sample_rate, frames=info.frames,
            channels=info.channels, duration_s=round(info.duration_s, 6), attempts=0))

    def reuse_audio(self, sample: Sample, previous: SampleOutcome, source_dir: Path) -> None:
        """Bring a verified WAV from an earlier run: hard link where possible, else copy; re-hash the result."""
        rel = sample.audio_relpath()
        source, dest = source_dir / previous.audio_path, self.run_dir / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.reuse")
        if tmp.exists():
            tmp.unlink()
        try:
            os.link(source, tmp)  # the same inode: the bytes resume just verified
        except OSError:
            shutil.copyfile(source, tmp)
            if sha256_file(tmp) != previous.audio_sha256:
                tmp.unlink()
                raise ValueError(f"{source} changed while being copied")
        os.replace(tmp, dest)
        fields = previous.as_dict()
        fields.update(audio_path=rel, reused_from=str(source_dir), attempts=0, status=SampleStatus.GENERATED.value)
        self._set(SampleOutcome.from_dict(fields), sync=False)  # a crash here only means reusing it again

    def failed(self, sample: Sample, error_class: str, error: str, attempts: int) -> None:
        self._set(SampleOutcome(sample.sample_id, sample.pair_id, sample.speaker_id, SampleStatus.GENERATION_FAILED,
                                attempts=attempts, error_class=error_class, error=redact(error)))

    # -- run -----------------------------------------------------------------------------------
    def finish_unrequested(self, fields: dict[str, Any], provenance: dict[str, Any], **extra: Any) -> RunStatus:
        """Finish a run none of whose audio was requested here (a folder made outside clonebench, a derived task's
        processed clips): the fingerprints (the samples' inputs; ``fields``' digest as the generation fingerprint)
        journaled, ``generation_provenance`` and ``extra`` (seed, seed policy, ...) in the manifest."""
        input_fp, generation_fp = input_fingerprint(self.samples), digest(fields)
        self.journal.append("fingerprints", input=input_fp, generation=generation_fp, generation_fields=fields)
        self.extra.update({"measure": "quality", "effective_sampling": None, **extra,
                           "fingerprints": {"input": input_fp, "generation": generation_fp},
                           "generation_fingerprint_fields": fields, "generation_provenance": provenance})
        return self.finish()

    def counts(self) -> dict[str, int]:
        counter = Counter(o.status.value for o in self.outcomes.values())
        if self.input_failures:
            counter[SampleStatus.INPUT_FAILED.value] += len(self.input_failures)
        return dict(sorted(counter.items()))

    def finish(self, status: RunStatus | None = None, error: str | None = None) -> RunStatus:
        """Set the final status (derived from the outcomes unless given); later calls change nothing."""
        if self.finished:
            return self.status
        self.finished = True
        if error:
            self.errors.append(redact(error))
        if status is None:
            generated = sum(o.status == SampleStatus.GENERATED for o in self.outcomes.values())
            if generated == len(self.samples) and (self.samples or not self.input_failures):
                status = RunStatus.GENERATED  # (an empty shard has nothing to generate)
            else:
                status = RunStatus.PARTIAL if generated else RunStatus.FAILED
        self.status = status
        self.journal.append("run_end", status=status.value, counts=self.counts(), error=error)
        self.write_manifest(finished=True)
        self.journal.close()
        return status

    def write_manifest(self, finished: bool = False) -> None:
        with self._lock:
            self._write_manifest(finished)

    def _write_manifest(self, finished: bool) -> None:
        self._last_write = time.monotonic()
        rows = []
        for sample in self.samples:
            outcome = self.outcomes[sample.sample_id].as_dict()
            outcome.pop("sample_id", None)
            rows.append({"sample_id": sample.sample_id, "row_number": sample.row_number,
                         "source_index": sample.row.source_index, "seed": sample.seed if self.seeds_sent else None,
                         "prompt_sha256": sample.prompt.sha256, "target_sha256": sample.target.sha256,
                         "prompt_file_name": sample.row.prompt_file_name,
                         "target_file_name": sample.row.target_file_name, **outcome})
        payload = {**self.header, **self.extra, "status": self.status.value, "updated_at": time.time(),
                   "finished_at": time.time() if finished else None, "counts": self.counts(),
                   "errors": self.errors,
                   "sample_errors": [{"pair_id": o.pair_id, "sample_id": o.sample_id, "error_class": o.error_class,
                                      "error": o.error} for o in self.outcomes.values()
                                     if o.status == SampleStatus.GENERATION_FAILED],
                   "input_failures": self.input_failures, "samples": rows}
        atomic_write_json(self.run_dir / MANIFEST_NAME, payload)
