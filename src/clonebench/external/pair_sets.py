"""Pair sets: the pairs one task asks a model to generate, with the id each output file is named by.

A pair set comes from a source: a pair manifest (``from_manifest``) or an rvcbench suite (``from_suite``: one
pair set per generated task, its frozen pairs verified under a local copy of the suite's dataset). Everything
downstream (``clonebench prompts``, ``clonebench score``, the Hydra evaluate path) takes a list of pair sets and
never reads the source itself, so a new source only has to yield them.

Output ids follow rvcbench 2.2.1 (``benchmark/submission.py``): ``<task>__<pair_id>``, where the task and every
pair id match ``[A-Za-z0-9][A-Za-z0-9_.-]*`` and hold no ``__``. A model writes ``<id>.wav`` into one folder
(what batch scripts do) or ``<task>/<pair_id>.wav``. For a manifest the task defaults to its rows'
``dataset_name`` in lower case, so the libritts16 manifest gives exactly the ids of rvcbench's onboarding-v1
``libritts`` task (``libritts__LibriTTS-121-000039``, ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from clonebench.core.errors import ClonebenchError
from clonebench.core.hashing import sha256_file
from clonebench.core.records import Sample
from clonebench.data.manifest import Selection, build_samples
from clonebench.data.seedtts import is_meta_list
from clonebench.suite.definition import Suite

ID_SEPARATOR = "__"
_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def is_safe_name(name: str) -> bool:
    """rvcbench's rule for task names and pair ids (they become file names and batch-list fields)."""
    return bool(_SAFE.fullmatch(name)) and ID_SEPARATOR not in name


def output_id(task: str, pair_id: str) -> str:
    return f"{task}{ID_SEPARATOR}{pair_id}"


@dataclass(frozen=True)
class PairSet:
    """The selected pairs of one task, in source order; ``origin`` records where they came from."""

    task: str
    samples: tuple[Sample, ...]
    origin: dict = field(default_factory=dict)

    def output_id(self, sample: Sample) -> str:
        return output_id(self.task, sample.pair_id)

    def ids(self) -> list[str]:
        return [self.output_id(s) for s in self.samples]


def default_task(samples: list[Sample] | tuple[Sample, ...], source: str) -> str:
    """The rows' single ``dataset_name`` in lower case; else a ClonebenchError asking for ``--task``."""
    names = sorted({s.row.dataset_name for s in samples})
    if len(names) == 1 and is_safe_name(names[0].lower()):
        return names[0].lower()
    raise ClonebenchError(f"{source}: cannot name the task from the rows' dataset_name {names[:5]} (one name made of "
                          "letters, digits, '_', '.', '-' is needed): give one with --task NAME "
                          "(+vc.evaluation.task=NAME for run_vc.py)")


def check_ids(task: str, samples: list[Sample] | tuple[Sample, ...], source: str) -> None:
    """Every output id must be a safe, unique file name; one error lists every offending row."""
    problems = []
    if not is_safe_name(task):
        problems.append(f"task {task!r} is not a safe name (letters, digits, '_', '.', '-'; no '__')")
    seen: dict[str, int] = {}
    for sample in samples:
        pair = sample.pair_id
        where = f"row {sample.row_number} (pair_id {pair!r})"
        if not is_safe_name(pair):
            problems.append(f"{where}: pair_id is not usable in an output file name (letters, digits, '_', '.', "
                            "'-', not starting with '_', '.' or '-', no '__')")
        elif pair in seen:
            problems.append(f"{where}: pair_id already used by row {seen[pair]}; output ids <task>__<pair_id> "
                            "must be unique (select one manifest_variant or speaker)")
        seen.setdefault(pair, sample.row_number)
    if problems:
        raise ClonebenchError(f"{source}: {len(problems)} pair(s) cannot be named as output files:\n  "
                              + "\n  ".join(problems[:25]))


def from_samples(samples: list[Sample], task: str | None, origin: dict, source: str) -> PairSet:
    """A pair set of samples already loaded (``origin`` says how); the task defaults as ``default_task``."""
    name = task or default_task(samples, source)
    check_ids(name, samples, source)
    return PairSet(task=name, samples=tuple(samples), origin={**origin, "task": name, "pairs": len(samples)})


def from_manifest(manifest: Path, root: Path | None, *, task: str | None = None,
                  selection: Selection = Selection(), verify_audio: bool = True) -> PairSet:
    """The pair set of a manifest: its selected rows (audio verified against the manifest's hashes)."""
    manifest = Path(manifest)
    samples = build_samples(manifest, root, selection, None, verify_audio_files=verify_audio,
                            variant_key="--variant all")
    return from_samples(samples, task, manifest_origin(manifest, root, selection), str(manifest))


def suite_source(name_or_path: str) -> str:
    """How a suite is recorded: its name, or the absolute path of a suite folder (reloadable from anywhere)."""
    text = str(name_or_path)
    return str(Path(text).resolve()) if "/" in text or text.endswith(".json") else text


def from_suite(suite: Suite, name_or_path: str, data_root: Path, seed: int | None = None) -> list[PairSet]:
    """The pair sets of the suite's generated tasks, in suite order (derived tasks have no pairs of their own:
    they are made from their source task's audio). Every input of every task is verified under ``data_root``
    first; a SuiteInputError lists every problem of every task (``clonebench.suite.inputs``). ``seed``: the
    run seed of the samples (a suite run's; None for folders made elsewhere)."""
    from clonebench.suite.inputs import load_task_samples

    loaded = load_task_samples(suite, Path(data_root), seed)
    record = {key: value for key, value in suite.record().items() if key != "files"}
    out = []
    for task in suite.tasks:
        if task.derived:
            continue
        ts = loaded[task.name]
        origin = {"kind": "suite", "suite_source": suite_source(name_or_path), "suite": record,
                  "data_root": str(Path(data_root).resolve()), "input_fingerprint": ts.input_fingerprint}
        out.append(from_samples(ts.samples, task.name, origin, ts.label))
    return out


def manifest_origin(manifest: Path, root: Path | None, selection: Selection) -> dict:
    origin = {"kind": "manifest", "manifest": str(Path(manifest).resolve()), "manifest_sha256": sha256_file(manifest),
              "root": str(Path(root).resolve()) if root is not None else None,
              "manifest_variant": selection.manifest_variant, "speaker_id": selection.speaker_id}
    if is_meta_list(Path(manifest)):  # a Seed-TTS-eval list: its scripts name each output <utt>.wav
        origin["format"] = "seedtts_meta_list"
    return origin


def bare_names(pair_set: PairSet) -> bool:
    """Whether a submitted folder may name a pair's file ``<pair_id>.wav`` (a Seed-TTS-eval list's convention)."""
    return (pair_set.origin or {}).get("format") == "seedtts_meta_list"
