"""A derived task's processed clips recorded as a generation run of its own, as rvcbench 2.2.1 makes a derived task
its own task run (``_derived_rows`` + ``_run_task``: its own ``run_manifest.json``).

``tasks/<derived task>/`` gets what a generate phase writes (``generate.recorder``, as ``external.record`` does for a
folder made outside clonebench): the fsync'd journal, ``generated_audio/`` and ``run_manifest.json``. Each sample's
target is the unprocessed clone (the source run's clip, its path and sha256: upstream's ``target_path`` /
``target_sha256``), its audio the processed clip with its own sha256, size, rate and frames (upstream's
``generated_sha256``). The manifest's ``derived_from`` names the source run (task, directory, manifest sha256); its
``generation_provenance`` holds the transform record (``evaluate.protocols.transform.fingerprint``: the transform, upstream's
command lines, ffmpeg's and the encoders' versions), the source run and every sample's source clip and sha256.

A source sample without a clip is ``generation_failed`` with upstream's error, "Source sample failed in <task>"; a
clip the source run generated that is missing, changed or invalid, or that ffmpeg refuses, is ``generation_failed``
with the reason (its error class says which). Running again writes the same bytes (ffmpeg is deterministic), so
the metric cache, keyed by content, scores nothing twice.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from clonebench.core.hashing import sha256_bytes
from clonebench.core.records import AudioRef, RunStatus, Sample, SampleStatus
from clonebench.data.audio import InvalidAudio, validate_wav
from clonebench.data.identity import digest
from clonebench.evaluate.derived import TRANSFORM_FAILED, derive_items
from clonebench.evaluate.inputs import Requested, load_requested
from clonebench.evaluate.protocols.transform import Transform, fingerprint
from clonebench.generate.journal import MANIFEST_NAME
from clonebench.generate.recorder import RunRecorder

RULE = "rvcbench 2.2.1 _derived_rows: the processed clone scored against the unprocessed clone"
NOTE = "derived: the source task's generated clips through the task's transform (ffmpeg); no request was sent"
SOURCE_UNUSABLE = "source_unusable"
AUDIO_DIR = "generated_audio"


@dataclass(frozen=True)
class DerivedRun:
    """The recorded derived run: its samples (target: the unprocessed clone where there is one), the source run it
    came from, its transform record, its status and how many clips it holds."""

    run_dir: Path
    samples: list[Sample]
    derived_from: dict
    transform: dict
    status: RunStatus
    clips: int


def _clone_target(req: Requested, derived_from: str) -> Sample:
    """The derived sample: the source's pair whose target is the unprocessed clone (when the source has one)."""
    if req.item is None:
        return req.sample
    target = AudioRef(f"{derived_from} clone {req.sample.pair_id}", req.item.generated_sha256, req.item.generated_path)
    return dataclasses.replace(req.sample, target=target)


def record_derived(run_dir: Path, header: dict, task: str, derived_from: str, source_run: Path,
                   samples: list[Sample], transform: Transform) -> DerivedRun:
    """Transform ``source_run``'s clips (the task ``derived_from``, whose pairs are ``samples``) into ``run_dir``
    and record them as the derived task ``task``'s generation run; returns it, finished."""
    requested, source = load_requested(source_run, samples)
    source_manifest = json.loads((Path(source_run) / MANIFEST_NAME).read_text(encoding="utf-8"))
    origin = {"task": derived_from, "run_dir": source["run_dir"], "run_manifest_sha256": source["run_manifest_sha256"]}
    derived = [_clone_target(req, derived_from) for req in requested]
    recorder = RunRecorder(run_dir, {**header, "phase": "derive", "derived_from": origin})
    recorder.seeds_sent = any(row.get("seed") is not None for row in source_manifest.get("samples", []))
    recorder.set_samples(derived)
    transform_record = fingerprint(transform)
    try:
        failures = {e["row_number"]: e["error"] for e in source_manifest.get("input_failures", [])}
        if failures:  # the source task's input failures stay the derived task's (the same coverage)
            recorder.record_input_failures(failures, f"{derived_from} (the source task)")
        sources = _record_clips(recorder, derived_from, transform, requested, derived)
        fields = {"kind": "derived_task", "task": task, "derived_from": derived_from,
                  "source_generation": (source.get("fingerprints") or {}).get("generation"),
                  "source_audio_sha256": digest(sorted((sid, s["sha256"]) for sid, s in sources.items())),
                  "transform": transform_record}
        provenance = {"protocol": "derived", "note": NOTE, "rule": RULE, "task": task,
                      "derived_from": {**origin, "status": source.get("status"),
                                       "fingerprints": source.get("fingerprints")},
                      "transform": transform_record, "sources": sources}
        status = recorder.finish_unrequested(fields, provenance, seed=source_manifest.get("seed"),
                                             seed_policy=source_manifest.get("seed_policy"),
                                             seed_honoured=source_manifest.get("seed_honoured"),
                                             effective_sampling=source_manifest.get("effective_sampling"))
    except BaseException as exc:  # the manifest says what happened, never "running"
        recorder.finish(RunStatus.INTERRUPTED if isinstance(exc, KeyboardInterrupt) else RunStatus.FAILED,
                        f"{type(exc).__name__}: {exc}")
        raise
    clips = sum(o.status == SampleStatus.GENERATED for o in recorder.outcomes.values())
    return DerivedRun(Path(run_dir), derived, origin, transform_record, status, clips)


def _record_clips(recorder: RunRecorder, derived_from: str, transform: Transform, requested: list[Requested],
                  derived: list[Sample]) -> dict[str, dict]:
    """Each source clip transformed into the run and journaled (processed clip or failure); per sample id, the
    source clip it came from (path in the source run, sha256)."""
    made = derive_items(derived_from, transform, {r.sample.sample_id: r.item for r in requested},
                        recorder.run_dir / AUDIO_DIR)
    sources: dict[str, dict] = {}
    for req, sample, result in zip(requested, derived, made):
        if req.item is not None:
            sources[sample.sample_id] = {"pair_id": sample.pair_id, "audio_path": req.outcome.audio_path,
                                         "sha256": req.item.generated_sha256}
        if result.item is None:
            error, kind = result.error or "not derived", result.kind or TRANSFORM_FAILED
            if req.problem and req.outcome is not None and req.outcome.status == SampleStatus.GENERATED:
                error, kind = f"source clip in {derived_from} unusable: {req.problem}", SOURCE_UNUSABLE
            recorder.failed(sample, kind, error, 0)
            continue
        path = Path(result.item.generated_path)
        data = path.read_bytes()
        if sha256_bytes(data) != result.item.generated_sha256:
            recorder.failed(sample, "changed", f"processed clip {path} changed while it was recorded", 0)
            continue
        try:
            info = validate_wav(data)
        except InvalidAudio as exc:
            recorder.failed(sample, TRANSFORM_FAILED, f"ffmpeg wrote an invalid WAV {path}: {exc}", 0)
            continue
        recorder.save_external(sample, data, info, written=str(path.relative_to(recorder.run_dir)))
    return sources
