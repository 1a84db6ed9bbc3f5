"""RVCBench suites as typed records: ``load_suite(name) -> Suite`` with its ``Task`` list.

A suite (``onboarding-v1``, ``core-v1``, ``full-v1``) pins a Hugging Face dataset revision, an evaluation protocol
and a list of tasks; each task names its pairs (``*.metadata.json``) and their frozen selection
(``*.selection.json``: sample ids, audio sha256, input fingerprint), or is derived from another task's generated
audio by a transform (``derived_from`` + ``transform``). The rules are rvcbench 2.2.1's ``load_suite``: unique
file-name-safe task names, anchors and derived sources that exist, known metrics; selecting tasks adds their
anchors and derived sources, and a selection gets the suite sha256 ``digest({parent_suite_sha256,
selected_tasks})`` so its submission compares only with the same selection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from clonebench.core.hashing import sha256_bytes
from clonebench.data.identity import digest
from clonebench.suite.package import (
    SUITES_PREFIX,
    SuiteFileError,
    SuitePackage,
    decode_json,
    folder_package,
    installed_package,
    read_bytes,
    suite_folders,
)

# rvcbench's metric names (benchmark/artifacts.py METRIC_COLUMNS) -> clonebench's metric names
UPSTREAM_METRICS = {"sim": "sim", "sva": "sva", "wer": "wer", "mcd": "mcd", "speechmos": "mos",
                    "dnsmos": "dnsmos", "emotion": "emotion_match", "stoi": "stoi"}
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
ID_SEPARATOR = "__"


@dataclass(frozen=True)
class Transform:
    """How a derived task's audio is made from its source task's generated audio (applied by evaluate.protocols.transform at scoring time)."""

    kind: str                      # codec | narrowband
    codec: str | None = None       # mp3 | aac | opus
    bitrate: str | None = None     # e.g. 64k
    sample_rate: int | None = None

    @classmethod
    def parse(cls, raw: dict, where: str) -> "Transform":
        if not isinstance(raw, dict) or not isinstance(raw.get("kind"), str):
            raise SuiteFileError(f"{where}: transform must be an object with a 'kind'")
        rate = raw.get("sample_rate")
        return cls(raw["kind"], raw.get("codec"), raw.get("bitrate"), None if rate is None else int(rate))


@dataclass(frozen=True)
class Bootstrap:
    enabled: bool
    num_samples: int
    confidence_level: float
    seed: int | None


@dataclass(frozen=True)
class SuiteEvaluation:
    """The suite's scoring protocol (suite.json ``evaluation``); a task may override the metrics only."""

    required_metrics: tuple[str, ...]      # rvcbench names
    wer_normalization: str
    generated_audio_max_seconds: float | None
    seed: int
    bootstrap: Bootstrap


@dataclass(frozen=True)
class Task:
    name: str
    dimension: str | None
    evaluation: str | None                 # the paper's evaluation this task measures, e.g. RVC-AudioShift/Demography
    dataset_config: str | None             # rvcbench dataset config (defaults: name, manifest_variant)
    hf_config_name: str | None             # folder of the HF dataset holding the task's files
    manifest: str | None                   # pairs file in the suite folder
    selection: str | None                  # frozen selection file in the suite folder
    anchor: str | None = None              # the task this one is compared against (its clean counterpart)
    group_by: tuple[str, ...] = ()
    required_metrics: tuple[str, ...] | None = None   # rvcbench names; None = the suite's
    derived_from: str | None = None
    transform: Transform | None = None
    paths: str | None = None               # "repo": file names are relative to the dataset root, not a config folder
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def derived(self) -> bool:
        return self.derived_from is not None

    @property
    def repo_paths(self) -> bool:
        return self.paths == "repo"

    def data_dir(self, root: Path) -> Path:
        """Where the task's files live in a local copy of the HF dataset."""
        return Path(root) if self.repo_paths else Path(root) / str(self.hf_config_name)


@dataclass(frozen=True)
class Suite:
    name: str                              # e.g. core-v1
    version: int
    leaderboard: bool
    label: str
    paper: str | None
    hf_dataset_id: str
    hf_revision: str
    evaluation: SuiteEvaluation
    tasks: tuple[Task, ...]                # the selected tasks, in suite order
    all_tasks: tuple[str, ...]             # every task of the suite
    folder: str                            # package-relative folder of the suite files
    package: SuitePackage
    suite_sha256: str
    parent_suite_sha256: str | None = None
    selected_tasks: tuple[str, ...] | None = None
    not_included: dict = field(default_factory=dict)

    def task(self, name: str) -> Task:
        for task in self.tasks:
            if task.name == name:
                return task
        raise KeyError(name)

    def metrics(self, task: Task) -> tuple[str, ...]:
        """The task's required metrics, rvcbench names (rvcbench's ``_metrics_for``)."""
        return task.required_metrics or self.evaluation.required_metrics

    def read(self, name: str):
        """A file of the suite folder, checked against the wheel's RECORD, as JSON."""
        return decode_json(read_bytes(self.package, f"{self.folder}/{name}"), name)

    def file_bytes(self, name: str) -> bytes:
        return read_bytes(self.package, f"{self.folder}/{name}")

    def upstream_record(self) -> dict:
        """rvcbench's ``suite_record``: what its prompts/suite.json and submission.json name the suite by."""
        return {key: value for key, value in self.record().items()
                if key not in ("hf_dataset_id", "hf_revision", "files")}

    def record(self) -> dict:
        """rvcbench's ``suite_record`` plus where the files came from (recorded in every run of the suite)."""
        out = {"suite": self.name, "version": self.version, "leaderboard": self.leaderboard, "label": self.label,
               "suite_sha256": self.suite_sha256}
        if self.parent_suite_sha256 is not None:
            out.update(parent_suite_sha256=self.parent_suite_sha256, selected_tasks=list(self.selected_tasks or ()))
        out.update(hf_dataset_id=self.hf_dataset_id, hf_revision=self.hf_revision, files=self.package.describe())
        return out


def _safe(name: str) -> bool:
    return bool(_SAFE_NAME.fullmatch(name)) and ID_SEPARATOR not in name


def available_suites() -> list[str]:
    return [name.replace("_", "-") for name in suite_folders(installed_package())]


def _locate(name_or_path: str) -> tuple[SuitePackage, str, str]:
    """(package, folder, where) of a suite name (package data) or a path to a suite.json or its folder."""
    text = str(name_or_path)
    if "/" in text or text.endswith(".json"):
        path = Path(text)
        folder = path if path.is_dir() else path.parent
        if not (folder / "suite.json").is_file():
            raise SuiteFileError(f"suite {text}: no suite.json at {folder} (give a suite name, e.g. core-v1, or the "
                                 "folder of a suite.json)")
        return folder_package(folder), folder.name, str(folder / "suite.json")
    package = installed_package()
    folder = text.replace("-", "_")
    if folder not in suite_folders(package):
        names = ", ".join(f.replace("_", "-") for f in suite_folders(package))
        raise SuiteFileError(f"unknown suite {text!r}; rvcbench {package.version} ships: {names}")
    return package, f"{SUITES_PREFIX}/{folder}", f"{package.root / SUITES_PREFIX / folder / 'suite.json'}"


def _task(raw: dict, where: str) -> Task:
    metrics = raw.get("required_metrics")
    group_by = raw.get("group_by") or ()
    return Task(
        name=str(raw.get("task")), dimension=raw.get("dimension"), evaluation=raw.get("evaluation"),
        dataset_config=raw.get("dataset_config"), hf_config_name=raw.get("hf_config_name"),
        manifest=raw.get("manifest"), selection=raw.get("selection"), anchor=raw.get("anchor"),
        group_by=(group_by,) if isinstance(group_by, str) else tuple(group_by),
        required_metrics=tuple(metrics) if metrics else None, derived_from=raw.get("derived_from"),
        transform=Transform.parse(raw["transform"], where) if "transform" in raw else None,
        paths=raw.get("paths"), raw=raw)


def _evaluation(raw: dict, where: str) -> SuiteEvaluation:
    boot = raw.get("bootstrap") or {}
    cap = raw.get("generated_audio_max_seconds")
    try:
        return SuiteEvaluation(
            required_metrics=tuple(raw["required_metrics"]), wer_normalization=raw.get(
                "wer_normalization", "ascii_punctuation_removed_v2"),
            generated_audio_max_seconds=None if cap is None else float(cap), seed=int(raw.get("seed", 42)),
            bootstrap=Bootstrap(bool(boot.get("enabled", False)), int(boot.get("num_samples", 1000)),
                                float(boot.get("confidence_level", 0.95)), boot.get("seed")))
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise SuiteFileError(f"{where}: evaluation is malformed ({exc!r})") from None


def _check(spec: dict, tasks: list[Task], where: str) -> None:
    for key in ("suite", "version", "leaderboard", "label", "evaluation", "tasks"):
        if key not in spec:
            raise SuiteFileError(f"{where} is missing {key!r}")
    names = [t.name for t in tasks]
    if not names or len(set(names)) != len(names) or not all(_safe(n) for n in names):
        raise SuiteFileError(f"{where} needs unique, file-name-safe task names without {ID_SEPARATOR!r}")
    generated = {t.name for t in tasks if not t.derived}
    metric_sets = [spec["evaluation"].get("required_metrics") or ()] + [t.required_metrics or () for t in tasks]
    for task in tasks:
        if task.derived and (task.derived_from not in generated or task.transform is None):
            raise SuiteFileError(f"{where} task {task.name}: derived_from must name a generated task and come with "
                                 "a transform")
        if task.anchor and task.anchor not in names:
            raise SuiteFileError(f"{where} task {task.name}: anchor {task.anchor!r} is not a task of this suite")
        if not task.derived and not (task.manifest and task.selection and (task.hf_config_name or task.repo_paths)):
            raise SuiteFileError(f"{where} task {task.name}: needs manifest, selection and hf_config_name "
                                 "(or paths: repo)")
        for key in ("manifest", "selection", "hf_config_name"):
            value = getattr(task, key)
            if value is not None and (not isinstance(value, str) or not _SAFE_NAME.fullmatch(value) or ".." in value):
                raise SuiteFileError(f"{where} task {task.name}: {key} {value!r} must be a plain file or folder name "
                                     "(letters, digits, '_', '.', '-'; no path separator or '..')")
    unknown = {m for metrics in metric_sets for m in metrics} - set(UPSTREAM_METRICS)
    if unknown:
        raise SuiteFileError(f"{where}: unknown metrics {sorted(unknown)}; known: {sorted(UPSTREAM_METRICS)}")


def select_tasks(all_tasks: list[Task], requested: list[str] | tuple[str, ...], where: str) -> list[Task]:
    """The requested tasks plus, transitively, their anchors and derived sources, in suite order."""
    names = [t.name for t in all_tasks]
    unknown = sorted(set(requested) - set(names))
    if not requested or unknown:
        raise SuiteFileError(f"{where}: unknown or empty task selection {unknown or '[]'}; the suite's tasks: "
                             f"{', '.join(names)} (set suite.tasks=[...] to some of them, or null for all)")
    by_name = {t.name: t for t in all_tasks}
    selected, pending = set(requested), list(requested)
    while pending:
        task = by_name[pending.pop()]
        for dependency in (task.anchor, task.derived_from):
            if dependency and dependency not in selected:
                selected.add(dependency)
                pending.append(dependency)
    return [t for t in all_tasks if t.name in selected]


_TASK_TEXT = ("task", "dimension", "evaluation", "dataset_config", "hf_config_name", "manifest", "selection", "anchor",
              "derived_from", "paths")


def _types_problem(spec: dict) -> str | None:
    """The first key of suite.json whose value has a type its readers cannot use (a traceback otherwise)."""
    def text_list(value) -> bool:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)

    for key, kinds in (("suite", (str,)), ("label", (str,)), ("version", (int,)), ("leaderboard", (bool,)),
                       ("evaluation", (dict,))):
        if key in spec and (not isinstance(spec[key], kinds) or kinds == (int,) and isinstance(spec[key], bool)):
            return f"{key!r} must be a {kinds[0].__name__}"
    for key in ("not_included",):
        if spec.get(key) is not None and not isinstance(spec[key], dict):
            return f"{key!r} must be an object"
    evaluation = spec.get("evaluation")
    if isinstance(evaluation, dict):
        if "required_metrics" in evaluation and not text_list(evaluation["required_metrics"]):
            return "'evaluation.required_metrics' must be a list of metric names"
        if evaluation.get("bootstrap") is not None and not isinstance(evaluation["bootstrap"], dict):
            return "'evaluation.bootstrap' must be an object"
    for number, task in enumerate(spec["tasks"]):
        if not isinstance(task, dict):
            return f"tasks[{number}] must be an object"
        for key in _TASK_TEXT:
            if task.get(key) is not None and not isinstance(task[key], str):
                return f"tasks[{number}].{key} must be a string"
        if task.get("required_metrics") is not None and not text_list(task["required_metrics"]):
            return f"tasks[{number}].required_metrics must be a list of metric names"
        group_by = task.get("group_by")
        if group_by is not None and not isinstance(group_by, str) and not text_list(group_by):
            return f"tasks[{number}].group_by must be a column name or a list of them"
        transform = task.get("transform")
        if "transform" in task and isinstance(transform, dict):
            for key in ("kind", "codec", "bitrate"):
                if transform.get(key) is not None and not isinstance(transform[key], str):
                    return f"tasks[{number}].transform.{key} must be a string"
            rate = transform.get("sample_rate")
            if rate is not None and (not isinstance(rate, int) or isinstance(rate, bool)):
                return f"tasks[{number}].transform.sample_rate must be an integer"
    return None


def load_suite(name_or_path: str, tasks: list[str] | tuple[str, ...] | None = None) -> Suite:
    """A suite by name (package data of rvcbench 2.2.1, RECORD-verified) or by path; ``tasks`` narrows it."""
    package, folder, where = _locate(name_or_path)
    raw_bytes = read_bytes(package, f"{folder}/suite.json")
    spec = decode_json(raw_bytes, where)
    if not isinstance(spec, dict) or not isinstance(spec.get("tasks"), list):
        raise SuiteFileError(f"{where}: expected an object with a 'tasks' list")
    problem = _types_problem(spec)
    if problem:
        raise SuiteFileError(f"{where}: {problem}; restore the suite's own suite.json")
    every = [_task(t, f"{where} task {t.get('task')!r}") for t in spec["tasks"]]
    _check(spec, every, where)
    own_sha = sha256_bytes(raw_bytes)
    chosen, parent, selected = every, None, None
    if tasks is not None:
        chosen = select_tasks(every, list(tasks), where)
        if len(chosen) != len(every):
            parent, selected = own_sha, tuple(t.name for t in chosen)
    sha = own_sha if parent is None else digest({"parent_suite_sha256": parent, "selected_tasks": list(selected)})
    label = spec["label"] + (" Selected tasks only: " + ", ".join(selected) + "." if selected else "")
    return Suite(
        name=str(spec["suite"]), version=int(spec["version"]), leaderboard=bool(spec["leaderboard"]) and not selected,
        label=label, paper=spec.get("paper"), hf_dataset_id=str(spec.get("hf_dataset_id", "")),
        hf_revision=str(spec.get("hf_revision", "")), evaluation=_evaluation(spec["evaluation"], where),
        tasks=tuple(chosen), all_tasks=tuple(t.name for t in every), folder=folder, package=package,
        suite_sha256=sha, parent_suite_sha256=parent, selected_tasks=selected,
        not_included=dict(spec.get("not_included") or {}))
