"""``vc.resume_from=RUN_DIR``: reuse the verified audio of earlier runs of the same inputs and settings.

Runs form a chain: every run records the run it resumed from (``resume_origin``, written before anything
else), so resuming from the newest run, even one that failed or was killed before it generated anything,
reaches back through its origins to every run that holds finished samples. Each sample is taken from the
newest run of the chain that holds it; its WAV must lie inside that run (symlinks followed), match its
journaled sha256, and be a valid WAV. A WAV written just before a kill, before its ``sample`` event, is
recovered when it matches the journaled response hash of its successful attempt.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from clonebench.core.confine import OutsideRunError, inside
from clonebench.core.errors import ResumeError
from clonebench.core.hashing import sha256_bytes
from clonebench.core.records import Sample, SampleOutcome, SampleStatus
from clonebench.core.untrusted import (
    UntrustedFileError,
    read_bytes,
    read_json,
    read_text,
)
from clonebench.data.audio import InvalidAudio, validate_wav
from clonebench.generate.journal import (
    JOURNAL_NAME,
    MANIFEST_NAME,
    final_outcomes,
    read_events,
)

ORIGIN_KEY = "resume_origin"
MAX_RUN_MANIFEST_BYTES = 512 * 1024 * 1024   # a run's run_manifest.json larger than this is refused
MAX_HYDRA_CONFIG_BYTES = 16 * 1024 * 1024     # a run's .hydra/config.yaml larger than this counts as unreadable
MAX_GENERATED_WAV_BYTES = 1024 * 1024 * 1024  # a generated WAV larger than this is not reused (it is regenerated)


@dataclass(frozen=True)
class Reusable:
    outcome: SampleOutcome
    run_dir: Path      # the run of the chain that holds the WAV
    path: Path         # the WAV, resolved inside run_dir


def _differences(old: dict, new: dict) -> list[str]:
    keys = sorted(set(old) | set(new))
    return [f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in keys if old.get(k) != new.get(k)]


def _is_run_dir(path: Path) -> bool:
    return any((path / name).is_file() for name in (JOURNAL_NAME, MANIFEST_NAME, ".hydra/config.yaml"))


class _Unknown(Exception):
    pass


def run_origin(run_dir: Path) -> Path | None:
    """The run ``run_dir`` resumed from, from its manifest header (or, for a run killed before it wrote one,
    the ``vc.resume_from`` of its recorded Hydra config); _Unknown when neither says."""
    manifest = run_dir / MANIFEST_NAME
    if os.path.lexists(manifest) and not os.path.isdir(manifest):
        try:
            payload = read_json(manifest, max_bytes=MAX_RUN_MANIFEST_BYTES, follow=False, what="run manifest")
        except UntrustedFileError as exc:
            raise ResumeError(f"{manifest} is unreadable ({exc.reason}); restore it, or set vc.resume_from to an "
                              "earlier run of the chain (for a suite: an earlier suite run folder)") from None
        if not isinstance(payload, dict):
            raise ResumeError(f"{manifest} is not a JSON object; restore it, or set vc.resume_from to an earlier "
                              "run of the chain (for a suite: an earlier suite run folder)")
        config = payload.get("config")
        vc = config.get("vc") if isinstance(config, dict) else None
        origin = payload.get(ORIGIN_KEY) or (vc.get("resume_from") if isinstance(vc, dict) else None)
        if origin and not isinstance(origin, str):
            raise ResumeError(f"{manifest}: {ORIGIN_KEY} (or config.vc.resume_from) is a {type(origin).__name__}, "
                              "not a run directory path; resume from another run of the chain")
        return Path(origin) if origin else None
    hydra = run_dir / ".hydra" / "config.yaml"
    try:
        config = OmegaConf.create(read_text(hydra, max_bytes=MAX_HYDRA_CONFIG_BYTES, follow=False,
                                            what="Hydra config")) if hydra.is_file() else None
    except Exception:  # a config cut short by the kill: any parse error means the same as no config
        config = None
    if not isinstance(config, DictConfig):  # a list or scalar document is no run's config either
        config = None
    if config is None or OmegaConf.select(config, "vc", default=None) is None:
        raise _Unknown()
    origin = OmegaConf.select(config, "vc.resume_from", default=None)
    return Path(str(origin)).absolute() if origin else None


def _newest_run_before(run_dir: Path) -> Path | None:
    siblings = sorted(p for p in run_dir.parent.iterdir() if p.name < run_dir.name and (p / MANIFEST_NAME).is_file())
    return siblings[-1] if siblings else None


def resume_chain(start: Path) -> list[Path]:
    """``start`` and the runs it came from, newest first (resolved paths).

    A directory of the chain that exists but holds no journal, manifest or Hydra config, or whose origin is not
    recorded, was killed while starting: which runs hold its chain's finished samples is unknown, so the resume is
    refused, naming the newest earlier run with a manifest (the one to resume from). A directory that is gone is
    refused as such."""
    start = Path(start)
    if not start.is_dir():
        raise ResumeError(f"vc.resume_from={start}: no such run directory (give a run directory "
                          "results/<run_name>/<stamp>-<id>)")
    chain: list[Path] = []
    current: Path | None = Path(os.path.realpath(start))
    while current is not None and current not in chain:
        if not current.is_dir():
            raise ResumeError(f"vc.resume_from={start}: {chain[-1]} was resumed from {current}, which is no longer a "
                              "run directory, so the samples it finished cannot be reused; restore it (or resume from "
                              "it if it moved), or start a new run without vc.resume_from")
        try:
            if not _is_run_dir(current):
                raise _Unknown
            origin = run_origin(current)
        except _Unknown:
            before = _newest_run_before(current)
            hint = f" (probably {before}, the newest run before it with a {MANIFEST_NAME})" if before else \
                " (none before it has one: start a new run without vc.resume_from)"
            if not chain and not _is_run_dir(current):
                raise ResumeError(f"vc.resume_from={start}: no {JOURNAL_NAME} there: give a run directory "
                                  "results/<run_name>/<stamp>-<id>; if it is a run killed while starting, resume from "
                                  f"the newest run that has a {MANIFEST_NAME}{hint}") from None
            raise ResumeError(f"vc.resume_from={start}: {current} was killed while starting, before it recorded the run "
                              f"it resumed from (no {MANIFEST_NAME}, no readable .hydra/config.yaml), so the runs that "
                              f"hold finished samples are unknown; resume from the newest run that has a {MANIFEST_NAME}"
                              f"{hint}") from None
        chain.append(current)
        current = _moved(current, Path(os.path.realpath(origin))) if origin is not None else None
    return chain


def _moved(run_dir: Path, origin: Path) -> Path:
    """``origin`` as recorded by ``run_dir``; when it is gone and ``run_dir`` was made beside it (its manifest's
    ``run_dir``), the sibling of that name: a chain of runs moved or copied together (a results folder rsynced from
    a cluster) still resumes."""
    if origin.is_dir():
        return origin
    try:
        made_in = read_json(run_dir / MANIFEST_NAME, max_bytes=MAX_RUN_MANIFEST_BYTES, follow=False,
                            what="run manifest").get("run_dir")
    except (UntrustedFileError, AttributeError):
        return origin
    sibling = run_dir.parent / origin.name
    if isinstance(made_in, str) and Path(made_in).parent == origin.parent and sibling.is_dir():
        return Path(os.path.realpath(sibling))
    return origin


def _check_fingerprints(run_dir: Path, events: list[dict], input_fp: str, generation_fp: str, fields: dict) -> bool:
    recorded = [e for e in events if e["event"] == "fingerprints"]
    if not recorded:
        return False  # the run stopped before it computed fingerprints, so it generated nothing
    fingerprints = recorded[-1]
    if fingerprints.get("input") != input_fp:
        raise ResumeError(f"vc.resume_from={run_dir}: input fingerprint differs ({fingerprints.get('input')} vs "
                          f"{input_fp}): the pairs, their audio or transcripts, the selection or max_samples changed")
    if fingerprints.get("generation") != generation_fp:
        diff = _differences(fingerprints.get("generation_fields", {}), fields)
        raise ResumeError(f"vc.resume_from={run_dir}: generation fingerprint differs; changed: {diff}. Resume only "
                          "with the same seed, request settings and service files")
    return True


def _verified(run_dir: Path, relpath: str, sha256: str | None) -> tuple[Path, bytes] | None:
    try:
        path = inside(run_dir, relpath, f"{run_dir / JOURNAL_NAME} audio_path")
    except OutsideRunError:
        return None
    try:  # inside() resolved it within the run: a regular file of bounded size, or not reusable
        data = read_bytes(path, max_bytes=MAX_GENERATED_WAV_BYTES, within=run_dir, what="generated audio")
    except UntrustedFileError:
        return None
    if sha256 is None or sha256_bytes(data) != sha256:
        return None
    try:
        validate_wav(data)
    except InvalidAudio:
        return None
    return path, data


def _orphan(run_dir: Path, sample: Sample, events: list[dict]) -> Reusable | None:
    """A WAV saved just before a kill, before its ``sample`` event: reusable when it is the body of the
    sample's journaled successful attempt (``attempt_end`` is fsync'd before the WAV is written)."""
    ok = [e for e in events if e["event"] == "attempt_end" and e.get("sample_id") == sample.sample_id
          and e.get("purpose", "sample") == "sample" and e.get("outcome") == "ok" and e.get("response_sha256")]
    if not ok:
        return None
    rel = sample.audio_relpath()
    found = _verified(run_dir, rel, ok[-1]["response_sha256"])
    if found is None:
        return None
    path, data = found
    info = validate_wav(data)
    outcome = SampleOutcome(sample.sample_id, sample.pair_id, sample.speaker_id, SampleStatus.GENERATED,
                            audio_path=rel, audio_sha256=ok[-1]["response_sha256"], audio_bytes=len(data),
                            sample_rate=info.sample_rate, frames=info.frames, channels=info.channels,
                            duration_s=round(info.duration_s, 6), synthesis_time_s=ok[-1].get("duration_s"),
                            attempts=len(ok))
    return Reusable(outcome, run_dir, path)


def reusable_outcomes(resume_dir: Path, samples: list[Sample], input_fp: str, generation_fp: str,
                      generation_fields: dict, chain: list[Path] | None = None) -> dict[str, Reusable]:
    """Finished samples of ``resume_dir`` and the runs it came from whose audio is still inside its run, with the
    journaled sha256, and a valid WAV."""
    chain = chain if chain is not None else resume_chain(resume_dir)
    reusable: dict[str, Reusable] = {}
    for run_dir in chain:
        events = list(read_events(run_dir / JOURNAL_NAME))
        if not _check_fingerprints(run_dir, events, input_fp, generation_fp, generation_fields):
            continue
        outcomes = final_outcomes(events)
        for sample in samples:
            if sample.sample_id in reusable:
                continue
            outcome = outcomes.get(sample.sample_id)
            if outcome is not None and outcome.status == SampleStatus.GENERATED and outcome.audio_path:
                found = _verified(run_dir, outcome.audio_path, outcome.audio_sha256)
                if found is not None:
                    reusable[sample.sample_id] = Reusable(outcome, run_dir, found[0])
                    continue
            recovered = _orphan(run_dir, sample, events)
            if recovered is not None:
                reusable[sample.sample_id] = recovered
    return reusable
