"""What the evaluate phase scores: the generation run's saved WAVs, re-hashed, matched to the dataset's pairs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import soundfile as sf

from clonebench.core.confine import OutsideRunError, inside
from clonebench.core.errors import ClonebenchError
from clonebench.core.hashing import sha256_bytes, sha256_file
from clonebench.core.records import Sample, SampleOutcome, SampleStatus
from clonebench.core.untrusted import UntrustedFileError
from clonebench.data.audio import InvalidAudio, validate_wav
from clonebench.data.identity import input_fingerprint
from clonebench.evaluate.protocols.audio import header_seconds
from clonebench.evaluate.protocols.base import ScoreItem
from clonebench.generate.journal import JOURNAL_NAME, MANIFEST_NAME, final_outcomes, read_events


@dataclass
class Requested:
    """One requested sample: its pair, its generation outcome, and its score item or why it has none."""

    sample: Sample
    outcome: SampleOutcome | None
    item: ScoreItem | None
    problem: str | None


def source_run_dir(generated_audio_dir: Path) -> Path:
    """``results/<run>/<stamp>-<id>/generated_audio`` -> the run directory (the folder itself also works)."""
    path = Path(generated_audio_dir)
    run = path.parent if path.name == "generated_audio" else path
    if not (run / MANIFEST_NAME).is_file():
        raise ClonebenchError(f"vc.evaluation.generated_audio_dir={generated_audio_dir}: no {MANIFEST_NAME} in {run} "
                              "(give results/<run_name>/<stamp>-<id>/generated_audio of a generation run, or a "
                              "folder of <id>.wav files made outside clonebench)")
    return run


def is_external_folder(generated_audio_dir: Path) -> bool:
    """A folder of ``<id>.wav`` files made outside clonebench: an existing folder that is not a run's
    ``generated_audio`` (nor a run directory)."""
    path = Path(generated_audio_dir)
    if not path.is_dir() or path.name == "generated_audio" or (path / MANIFEST_NAME).is_file():
        return False
    return True


def load_requested(source_run: Path, samples: list[Sample]) -> tuple[list[Requested], dict]:
    """Match the dataset's samples to the generation run; every WAV is re-hashed and validated before use."""
    manifest = json.loads((source_run / MANIFEST_NAME).read_text(encoding="utf-8"))
    if manifest.get("measure", "quality") != "quality":
        raise ClonebenchError(f"{source_run} is a timing run (adversary.measure={manifest['measure']}): its streamed "
                              "audio is for latency figures and is never scored; evaluate a quality run")
    recorded = manifest.get("fingerprints", {}).get("input")
    current = input_fingerprint(samples)
    if recorded != current:
        raise ClonebenchError(
            f"the pairs to score (input fingerprint {current[:16]}...) are not the pairs {source_run} generated "
            f"({str(recorded)[:16]}...): evaluate with the same dataset.* settings, seed-independent selection "
            "and adversary.max_samples as the generation run")
    outcomes = final_outcomes(read_events(source_run / JOURNAL_NAME))
    requested = []
    for sample in samples:
        outcome = outcomes.get(sample.sample_id)
        if outcome is None or outcome.status != SampleStatus.GENERATED:
            status = outcome.status.value if outcome else "never generated"
            requested.append(Requested(sample, outcome, None, f"generation {status}"))
            continue
        problem = None
        try:
            path = inside(source_run, outcome.audio_path or "", f"{source_run / JOURNAL_NAME} ({sample.pair_id})")
        except OutsideRunError as exc:
            path, problem = None, f"generated WAV refused: {exc}"
        if problem:
            pass
        elif not path.is_file():
            problem = f"generated WAV missing: {path}"
        else:
            data = path.read_bytes()
            if sha256_bytes(data) != outcome.audio_sha256:
                problem = f"generated WAV {path} changed since generation (sha256 differs from the journal)"
            else:
                try:
                    validate_wav(data)
                except InvalidAudio as exc:
                    problem = f"generated WAV {path} is invalid: {exc}"
        item = None if problem else ScoreItem(
            sample_id=sample.sample_id, pair_id=sample.pair_id, speaker_id=sample.speaker_id, generated_path=path,
            generated_sha256=outcome.audio_sha256, target_path=sample.target.path, target_sha256=sample.target.sha256,
            target_text=sample.row.target_text, language=sample.row.target_language,
            prompt_path=sample.prompt.path, prompt_sha256=sample.prompt.sha256, prompt_text=sample.row.prompt_text,
            prompt_language=sample.row.prompt_language)
        requested.append(Requested(sample, outcome, item, problem))
    return requested, {"run_dir": str(source_run), "run_manifest_sha256": sha256_file(source_run / MANIFEST_NAME),
                       "status": manifest.get("status"), "fingerprints": manifest.get("fingerprints"),
                       "seed": manifest.get("seed"), "seed_policy": manifest.get("seed_policy")}


def refuse_long_clips(items: list[ScoreItem], max_seconds: float, within: Path | None = None) -> None:
    """A ClonebenchError naming every clip longer than ``evaluation.max_clip_seconds`` (its header's duration):
    the evaluate phase refuses them before any scorer loads."""
    over = []
    for item in items:
        try:
            seconds = header_seconds(item.generated_path, within)
        except UntrustedFileError as exc:
            raise ClonebenchError(f"{exc} (a clip to score)") from None
        if seconds is not None and seconds > max_seconds:
            over.append(f"{item.generated_path} ({seconds:.1f} s)")
    if over:
        raise ClonebenchError(
            f"{len(over)} clip(s) to score are longer than evaluation.max_clip_seconds={max_seconds:g}: "
            + "; ".join(over[:5]) + (f"; and {len(over) - 5} more" if len(over) > 5 else "")
            + ". Nothing was scored: shorten or remove those clips, or raise the bound "
            f"(evaluation.max_clip_seconds=SECONDS, e.g. {max(max_seconds * 2, 3600):g})")


def duration(path: Path | None) -> float | None:
    if path is None or not Path(path).is_file():
        return None
    info = sf.info(str(path))
    return round(info.frames / info.samplerate, 6)
