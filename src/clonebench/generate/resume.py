"""``vc.resume_from=RUN_DIR``: reuse the verified audio of an earlier run of the same inputs and settings."""

from __future__ import annotations

from pathlib import Path

from clonebench.errors import ResumeError
from clonebench.generate.journal import JOURNAL_NAME, final_outcomes, read_events
from clonebench.hashing import sha256_file
from clonebench.records import Sample, SampleOutcome, SampleStatus


def _differences(old: dict, new: dict) -> list[str]:
    keys = sorted(set(old) | set(new))
    return [f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in keys if old.get(k) != new.get(k)]


def reusable_outcomes(resume_dir: Path, samples: list[Sample], input_fp: str, generation_fp: str,
                      generation_fields: dict) -> dict[str, SampleOutcome]:
    """Finished samples of ``resume_dir`` whose audio is still on disk with the journaled sha256."""
    resume_dir = Path(resume_dir)
    journal = resume_dir / JOURNAL_NAME
    if not journal.is_file():
        raise ResumeError(f"vc.resume_from={resume_dir}: no {JOURNAL_NAME} there (give a run directory "
                          "results/<run_name>/<stamp>-<id>)")
    events = list(read_events(journal))
    recorded = [e for e in events if e["event"] == "fingerprints"]
    if not recorded:
        return {}  # the earlier run stopped before it computed fingerprints, so it generated nothing
    fingerprints = recorded[-1]
    if fingerprints.get("input") != input_fp:
        raise ResumeError(f"vc.resume_from={resume_dir}: input fingerprint differs ({fingerprints.get('input')} vs "
                          f"{input_fp}): the pairs, their audio or transcripts, the selection or max_samples changed")
    if fingerprints.get("generation") != generation_fp:
        diff = _differences(fingerprints.get("generation_fields", {}), generation_fields)
        raise ResumeError(f"vc.resume_from={resume_dir}: generation fingerprint differs; changed: {diff}. Resume only "
                          "with the same seed, request settings and service files")
    outcomes = final_outcomes(events)
    reusable = {}
    for sample in samples:
        outcome = outcomes.get(sample.sample_id)
        if outcome is None or outcome.status != SampleStatus.GENERATED or not outcome.audio_path:
            continue
        path = resume_dir / outcome.audio_path
        if path.is_file() and sha256_file(path) == outcome.audio_sha256:
            reusable[sample.sample_id] = outcome
    return reusable
