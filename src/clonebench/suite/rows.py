"""A suite task's pairs, read exactly as rvcbench 2.2.1 reads them, and its frozen selection.

rvcbench loads a task's ``*.metadata.json`` through its dataset loader (``datasets/manifest_utils.py``,
``datasets/zero_shot.py``), which fills missing fields before the sample id is computed; this module applies the
same rules (written here, not imported) so that clonebench's sample ids, seeds (run seed + ``source_index``) and
input fingerprint equal the ``*.selection.json`` file's:

- ``dataset_name`` defaults to the name of the folder the files are read from (the HF config name); ``split`` to
  ``default``; ``pair_id`` to ``<dataset>-<speaker>-<source_row:06d>``; ``speaker_id`` to the prompt speaker;
  ``target_file_name`` to the prompt file; ``target_language`` to ``prompt_language``; texts to ``""``.
- ``manifest_variant`` is inferred when no row has one (``<speaker>.json`` -> speaker, ``<speaker>_text.json`` ->
  speaker_text, else default), and rows are kept by the dataset config's ``manifest_variant`` (LibriTTS: speaker).
- the expected sha256 of each pair's audio comes from the selection file (the metadata has none).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache

from omegaconf import OmegaConf

from clonebench.core.hashing import sha256_bytes
from clonebench.data.manifest import Selection
from clonebench.suite.definition import Suite, Task
from clonebench.suite.package import (
    DATASET_CONFIGS_PREFIX,
    SuiteFileError,
    installed_package,
    read_bytes,
)

REPEATED = ("dataset_name", "split", "speaker_id", "manifest_variant", "source_manifest", "prompt_language",
            "target_language")


@dataclass(frozen=True)
class FrozenSample:
    """One sample of a ``*.selection.json``: identity, transcripts, languages and the audio sha256."""

    sample_id: str
    pair_id: str
    speaker_id: str
    source_index: int
    prompt_sha256: str
    target_sha256: str


@dataclass(frozen=True)
class FrozenSelection:
    method: str | None
    input_fingerprint: str
    metadata_sha256: str
    requested: int
    samples: dict[str, FrozenSample]       # by sample id


@dataclass(frozen=True)
class TaskRows:
    """A task's pair rows (rvcbench's normalisation, expected hashes filled in) and what they group by."""

    task: Task
    rows: list[dict]                       # manifest rows as clonebench's manifest reader takes them
    groups: dict[str, dict[str, str]]      # pair_id -> {group_by column: value}
    selection: FrozenSelection
    variant: Selection


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return str(value)


def normalise(record: dict, dataset_name: str, source_manifest: str, position: int) -> dict:
    """rvcbench's ``_normalize_record`` for a JSON row (legacy ``ori_*``/``gt_*`` keys are not used by suites)."""
    prompt_speaker = _text(record.get("prompt_speaker_id") or record.get("speaker_id"))
    target_speaker = _text(record.get("target_speaker_id") or prompt_speaker)
    speaker = _text(record.get("speaker_id") or prompt_speaker or target_speaker)
    prompt_file = _text(record.get("prompt_file_name"))
    source_row = record.get("source_row", position)
    out = dict(record)
    out.update(
        dataset_name=_text(record.get("dataset_name") or dataset_name),
        split=_text(record.get("split") or record.get("data_split") or "default"),
        pair_id=_text(record.get("pair_id") or f"{dataset_name}-{speaker or 'unknown'}-{int(position):06d}"),
        speaker_id=speaker, prompt_file_name=prompt_file,
        target_file_name=_text(record.get("target_file_name") or prompt_file),
        prompt_language=_text(record.get("prompt_language")), prompt_text=_text(record.get("prompt_text")),
        target_language=_text(record.get("target_language") or record.get("prompt_language")),
        target_text=_text(record.get("target_text")),
        source_manifest=record.get("source_manifest") or source_manifest, source_row=source_row)
    for key in REPEATED:  # the same few values in every row: one string each (full-v1 has 12,724 rows)
        if isinstance(out.get(key), str):
            out[key] = sys.intern(out[key])
    return out


def infer_variants(rows: list[dict]) -> None:
    """rvcbench's ``select_manifest_variant`` naming rule, applied when no row names its variant."""
    if any("manifest_variant" in row for row in rows):
        return
    for row in rows:
        source, speaker = str(row.get("source_manifest")), str(row.get("speaker_id"))
        row["manifest_variant"] = ("speaker" if source == speaker + ".json" else
                                   "speaker_text" if source == speaker + "_text.json" else "default")


@lru_cache(maxsize=None)
def dataset_variant(dataset_config: str | None) -> str | None:
    """``manifest_variant`` of rvcbench's dataset config (package data), e.g. ``speaker`` for libritts."""
    if not dataset_config:
        return None
    package = installed_package()
    name = f"{DATASET_CONFIGS_PREFIX}/{dataset_config}.yaml"
    if name not in package.record:
        raise SuiteFileError(f"rvcbench {package.version} has no dataset config {dataset_config!r} ({name})")
    try:
        config = OmegaConf.create(read_bytes(package, name).decode("utf-8"))
        value = config.get("manifest_variant") if hasattr(config, "get") else None
    except (UnicodeDecodeError, ValueError) as exc:
        raise SuiteFileError(f"rvcbench dataset config {name} is not readable YAML ({type(exc).__name__}); "
                             "reinstall rvcbench") from None
    return None if value is None else str(value)


def frozen_selection(suite: Suite, task: Task) -> FrozenSelection:
    raw = suite.read(task.selection)
    where = f"{suite.name} task {task.name} selection {task.selection}"
    if not isinstance(raw, dict) or not isinstance(raw.get("samples"), list):
        raise SuiteFileError(f"{where}: malformed (expected an object with a 'samples' list); restore the suite's "
                             "own file")
    try:
        samples = {}
        for s in raw["samples"]:
            for key in ("sample_id", "prompt_sha256", "target_sha256"):
                if not isinstance(s.get(key), str):
                    raise SuiteFileError(f"{where}: malformed (a sample's {key!r} is not a string); restore the "
                                         "suite's own file")
            samples[s["sample_id"]] = FrozenSample(s["sample_id"], str(s["pair_id"]), str(s["speaker_id"]),
                                                   int(s["source_index"]), s["prompt_sha256"], s["target_sha256"])
        for key in ("input_fingerprint", "metadata_sha256"):
            if not isinstance(raw.get(key), str):
                raise SuiteFileError(f"{where}: malformed ({key!r} is not a string); restore the suite's own file")
        return FrozenSelection(raw.get("selection"), raw["input_fingerprint"], raw["metadata_sha256"],
                               int(raw.get("requested", len(samples))), samples)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise SuiteFileError(f"{where}: malformed ({exc!r}); restore the suite's own file") from None


def task_rows(suite: Suite, task: Task) -> TaskRows:
    """The task's rows in manifest order, each with the selection's expected prompt/target sha256."""
    from clonebench.data.identity import sample_id
    from clonebench.data.manifest import parse_row

    if task.derived:
        raise ValueError(f"task {task.name} is derived from {task.derived_from}: it has no pairs of its own")
    data = suite.file_bytes(task.manifest)
    selection = frozen_selection(suite, task)
    where = f"{suite.name} task {task.name}"
    if sha256_bytes(data) != selection.metadata_sha256:
        raise SuiteFileError(f"{where}: {task.manifest} has sha256 {sha256_bytes(data)}, its selection file says "
                             f"{selection.metadata_sha256}")
    from clonebench.suite.package import decode_json

    raw_rows = decode_json(data, task.manifest)
    if not isinstance(raw_rows, list) or not all(isinstance(r, dict) for r in raw_rows):
        raise SuiteFileError(f"{where}: {task.manifest} is not a JSON list of row objects; restore the suite's own "
                             "file")
    folder_name = "" if task.repo_paths else str(task.hf_config_name)
    rows = [normalise(r, folder_name, task.manifest, i) for i, r in enumerate(raw_rows)]
    infer_variants(rows)
    variant = Selection(dataset_variant(task.dataset_config), None, None)
    groups: dict[str, dict[str, str]] = {}
    problems: list[str] = []
    kept = set()
    for number, row in enumerate(rows):
        if variant.manifest_variant is not None and row.get("manifest_variant") != variant.manifest_variant:
            continue
        parsed = parse_row(row, f"{where} row {number}", problems)
        if parsed is None:
            continue
        frozen = selection.samples.get(sample_id(parsed))
        if frozen is None:
            problems.append(f"{where} row {number} (pair_id {parsed.pair_id!r}): its sample id is not in "
                            f"{task.selection}")
            continue
        row["prompt_sha256"], row["target_sha256"] = frozen.prompt_sha256, frozen.target_sha256
        kept.add(frozen.sample_id)
        groups[parsed.pair_id] = {column: str(row.get(column) or "") for column in task.group_by}
    if not problems and kept != set(selection.samples):
        problems.append(f"{task.manifest} selects {len(kept)} distinct pairs, {task.selection} lists "
                        f"{len(selection.samples)}")
    if problems:
        raise SuiteFileError(f"{where}: the suite files disagree:\n  " + "\n  ".join(problems[:20]))
    return TaskRows(task, rows, groups, selection, variant)
