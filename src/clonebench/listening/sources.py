"""The clips a listening test can present, read from runs: per run (a *system*) the generated WAV of each pair,
and per pair the natural recordings the runs used (the prompt, i.e. the reference speaker, and the target).

A run is a generation run (``run_manifest.json``) or an evaluated run (``scoring_manifest.json`` naming its
generation run). Every file is checked against the sha256 its manifest recorded, so a test presents exactly
the audio that was generated and scored."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from clonebench.core.confine import inside
from clonebench.core.errors import ClonebenchError
from clonebench.core.hashing import sha256_file
from clonebench.core.runpaths import generation_run
from clonebench.core.untrusted import read_json
from clonebench.generate.journal import MAX_RUN_RECORD_BYTES


@dataclass(frozen=True)
class Recording:
    path: Path
    sha256: str


@dataclass(frozen=True)
class Pair:
    """One reference -> target pair: the natural recordings (shared by every system)."""

    pair_id: str
    speaker_id: str
    prompt: Recording
    target: Recording


@dataclass
class System:
    """A run as a listening-test system: its label and its generated clip per pair id."""

    label: str
    run_dir: Path                      # the directory given
    generation_dir: Path               # the generation run holding the audio
    run_name: str
    clips: dict[str, Recording] = field(default_factory=dict)


def generation_dir(run_dir: Path) -> Path:
    """The generation run of ``run_dir``: itself, or the run its scoring manifest names."""
    run_dir = Path(run_dir)
    scoring = run_dir / "scoring_manifest.json"
    if scoring.is_file():
        record = read_json(scoring, max_bytes=MAX_RUN_RECORD_BYTES, within=run_dir, what="scoring manifest")
        source_run = record.get("source_run") if isinstance(record, dict) else None
        source = source_run.get("run_dir") if isinstance(source_run, dict) else None
        if source is not None and not isinstance(source, str):
            raise ClonebenchError(f"{scoring}: source_run.run_dir is not a string; give the generation run directory")
        found = generation_run(run_dir, source_run)  # relative to run_dir, or the run itself moved (core/runpaths.py)
        if (found / "run_manifest.json").is_file():
            return found
        if (run_dir / "run_manifest.json").is_file():
            return run_dir
        raise ClonebenchError(f"{scoring}: its source_run.run_dir {source!r} has no run_manifest.json (moved or "
                              "deleted?); give the generation run directory")
    if not (run_dir / "run_manifest.json").is_file():
        raise ClonebenchError(f"{run_dir}: no run_manifest.json or scoring_manifest.json; give a run directory "
                              "(results/<run_name>/<stamp>-<id>)")
    return run_dir


def _dataset_root(manifest: dict, where: Path) -> Path:
    dataset = manifest.get("config", {}).get("dataset", {})
    if dataset.get("root_path"):
        return Path(dataset["root_path"])
    if dataset.get("manifest_filename"):
        return Path(dataset["manifest_filename"]).parent
    raise ClonebenchError(f"{where}: the run's pairs came from a Hugging Face dataset, not files; a listening test "
                          "needs the natural recordings as files: generate from a pair manifest "
                          "(+dataset.manifest_filename=..., dataset.root_path=...)")


def _verified(path: Path, sha256: str | None, what: str) -> Recording:
    if not path.is_file():
        raise ClonebenchError(f"{what}: {path} does not exist")
    actual = sha256_file(path)
    if sha256 and actual != sha256:
        raise ClonebenchError(f"{what}: {path} has sha256 {actual}, the run recorded {sha256}: the file changed "
                              "after the run; restore it or use a run made with this file")
    return Recording(path, actual)


def load_system(run_dir: Path) -> tuple[System, dict[str, Pair]]:
    """A run's generated clips (pairs that generated) and the natural recordings of those pairs."""
    gen_dir = generation_dir(run_dir)
    manifest_path = gen_dir / "run_manifest.json"
    manifest = read_json(manifest_path, max_bytes=MAX_RUN_RECORD_BYTES, within=gen_dir, what="run manifest")
    if not isinstance(manifest, dict) or not isinstance(manifest.get("samples", []), list):
        raise ClonebenchError(f"{manifest_path}: not a run manifest (an object with a samples list); "
                              "give a run directory written by clonebench")
    root = _dataset_root(manifest, manifest_path)
    name = manifest.get("run_name") or gen_dir.parent.name
    system = System(label=name, run_dir=Path(run_dir), generation_dir=gen_dir, run_name=name)
    pairs = {}
    for sample in manifest.get("samples", []):
        if sample.get("status") != "generated" or not sample.get("audio_path"):
            continue
        pair_id, where = sample["pair_id"], f"{manifest_path} pair {sample['pair_id']!r}"
        # a manifest is data: its paths must stay inside the run (audio) and the dataset root (recordings)
        files = {role: inside(base, sample[name], f"{where} {name}") for role, base, name in
                 (("generated", gen_dir, "audio_path"), ("prompt", root, "prompt_file_name"),
                  ("target", root, "target_file_name"))}
        system.clips[pair_id] = _verified(files["generated"], sample.get("audio_sha256"), f"{where} generated audio")
        pairs[pair_id] = Pair(pair_id, str(sample["speaker_id"]),
                              _verified(files["prompt"], sample.get("prompt_sha256"), f"{where} prompt_file_name"),
                              _verified(files["target"], sample.get("target_sha256"), f"{where} target_file_name"))
    if not system.clips:
        raise ClonebenchError(f"{manifest_path}: no generated sample; nothing to listen to")
    return system, pairs


def load_systems(run_dirs: list[Path], labels: list[str] | None = None) -> tuple[list[System], dict[str, Pair]]:
    """Every run as a system, and the pairs every run generated (their natural recordings must agree)."""
    systems, common = [], None
    for run_dir in run_dirs:
        system, pairs = load_system(run_dir)
        if any(s.generation_dir.resolve() == system.generation_dir.resolve() for s in systems):
            raise ClonebenchError(f"{run_dir}: the generation run {system.generation_dir} is given twice; "
                                  "give each system once")
        if common is None:
            common = pairs
        else:
            for pair_id in set(common) & set(pairs):
                if (common[pair_id].prompt.sha256, common[pair_id].target.sha256) != \
                        (pairs[pair_id].prompt.sha256, pairs[pair_id].target.sha256):
                    raise ClonebenchError(f"{run_dir}: pair {pair_id!r} used other recordings than in "
                                          f"{systems[0].run_dir}; a listening test compares runs of the same pairs")
            common = {p: common[p] for p in common if p in pairs}
        systems.append(system)
    for system, label in zip(systems, labels or []):
        system.label = label
    seen: dict[str, int] = {}
    for system in systems:
        seen[system.label] = seen.get(system.label, 0) + 1
    for system in systems:  # two runs of one run_name: tell them apart by their directory
        if seen[system.label] > 1:
            system.label = f"{system.label} ({system.generation_dir.name})"
    if len({s.label for s in systems}) != len(systems):
        raise ClonebenchError(f"system labels {[s.label for s in systems]} are not unique; give --label per run")
    if not common:
        raise ClonebenchError(f"the runs {[str(r) for r in run_dirs]} have no generated pair in common")
    return systems, common
