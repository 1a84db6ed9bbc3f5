"""A suite's inputs in a local copy of its Hugging Face dataset, all verified before any request.

Files are read from ``<dataset.root_path>/<hf_config_name>/<file name>`` (the dataset repository's layout), or,
for tasks with ``"paths": "repo"`` (protected references: ``Protected_LibriTTS/<method>/...`` beside
``Libritts/audios/...``), from ``<dataset.root_path>/<file name>``. Every selected task is checked: each missing
or hash-mismatched file is reported together, naming task, row, field and file, with the tasks whose inputs are
complete, so that a run either has every input or narrows ``suite.tasks``. Nothing is downloaded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from clonebench.core.errors import ClonebenchError, ManifestError
from clonebench.core.records import Sample
from clonebench.data.audio_cache import AudioCheckCache
from clonebench.data.identity import input_fingerprint
from clonebench.data.manifest import file_audio_source, samples_from_rows
from clonebench.suite.definition import Suite, Task
from clonebench.suite.rows import task_rows

SHOWN_PER_TASK = 8


@dataclass(frozen=True)
class TaskSamples:
    """A generated task's verified pairs, ready for a run."""

    task: Task
    samples: list[Sample]
    groups: dict[str, dict[str, str]]      # pair_id -> {group_by column: value}
    input_fingerprint: str                 # the selection file's, which the samples' equals
    label: str                             # how problems name the task's pairs file


class SuiteInputError(ClonebenchError):
    """Inputs of one or more selected tasks are missing or differ from the frozen selection."""

    def __init__(self, suite: Suite, root: Path, problems: dict[str, list[str]], complete: list[str]):
        self.problems = problems
        self.complete = complete
        count = sum(len(p) for p in problems.values())
        lines = [f"suite {suite.name} ({suite.hf_dataset_id} at revision {suite.hf_revision}): {count} input "
                 f"problem(s) in {len(problems)} task(s) under dataset.root_path={root}; nothing was sent:"]
        for task, found in problems.items():
            lines.append(f"  task {task}: {len(found)} problem(s)" + (f"{where_hint(suite.task(task), root)}"))
            lines += [f"    {p}" for p in found[:SHOWN_PER_TASK]]
            if len(found) > SHOWN_PER_TASK:
                lines.append(f"    ... and {len(found) - SHOWN_PER_TASK} more (every problem is listed in "
                             "input_problems.txt of the suite directory)")
        fix = (f"run the tasks whose inputs are complete with suite.tasks=[{','.join(complete)}]" if complete else
               "no selected task has all its inputs")
        lines.append(f"Fix: {fix}; or place the missing files of {suite.hf_dataset_id} at revision "
                     f"{suite.hf_revision} under {root} (<hf_config_name>/<file name>, as in the dataset repository)")
        super().__init__("\n".join(lines))

    def listing(self) -> str:
        return "".join(f"task {task}: {p}\n" for task, found in self.problems.items() for p in found)


def where_hint(task: Task, root: Path) -> str:
    if task.repo_paths:
        return (f" (protected references: the files are named relative to {root} itself; clonebench does not run "
                "protection methods, so the protected audio must already be there, e.g. from the dataset repository "
                "or rvcbench's protection stage, with the selection's sha256)")
    return f" (files under {task.data_dir(root)})"


def runnable(suite: Suite, ready: set[str]) -> list[str]:
    """Tasks that can run with the inputs present: their own, their anchor's and their source's are all there
    (selecting a task adds its anchor and source, rvcbench's rule)."""
    by_name = {t.name: t for t in suite.tasks}

    def ok(name: str, seen: frozenset = frozenset()) -> bool:
        task = by_name[name]
        own = task.derived or name in ready
        deps = [d for d in (task.anchor, task.derived_from) if d and d not in seen]
        return own and all(ok(d, seen | {name}) for d in deps)

    return [t.name for t in suite.tasks if ok(t.name)]


def task_samples(suite: Suite, task: Task, root: Path, seed: int | None,
                 checked: AudioCheckCache | None = None) -> TaskSamples:
    """One generated task's samples with verified audio; ManifestError lists its problems (task, row, file)."""
    rows = task_rows(suite, task)
    label = f"{suite.name} task {task.name} ({task.manifest})"
    try:
        samples = samples_from_rows(label, rows.rows, rows.variant, seed,
                                    file_audio_source(task.data_dir(Path(root)), checked))
    except ManifestError as exc:
        raise ManifestError(label, [p.replace(f"{label} ", "", 1).replace("the manifest says", f"{task.selection} says")
                                    for p in exc.problems], exc.bad_rows) from None
    if input_fingerprint(samples) != rows.selection.input_fingerprint:  # every hash matched: cannot happen
        raise ManifestError(label, [f"input fingerprint {input_fingerprint(samples)} differs from the selection's "
                                    f"{rows.selection.input_fingerprint}"])
    return TaskSamples(task, samples, rows.groups, rows.selection.input_fingerprint, label)


def check_suite_inputs(suite: Suite, root: Path, seed: int | None, checked: AudioCheckCache | None = None,
                       check: Callable[[TaskSamples], None] | None = None) -> dict[str, int]:
    """Verify every generated task's inputs, one task at a time (one task's samples in memory at once), and run
    ``check`` (e.g. the reference-length rules: it raises ManifestError or ConfigError) on each task's samples.
    SuiteInputError lists every problem of every task; else the pairs per task. Validated files are remembered in
    ``checked`` only once every task passed."""
    counts: dict[str, int] = {}
    problems: dict[str, list[str]] = {}
    for task in suite.tasks:
        if task.derived:
            continue
        try:
            samples = task_samples(suite, task, root, seed, checked)
            if check is not None:
                check(samples)
        except ManifestError as exc:
            problems[task.name] = list(exc.problems)
            continue
        except ClonebenchError as exc:
            problems[task.name] = [str(exc)]
            continue
        counts[task.name] = len(samples.samples)
    if problems:
        raise SuiteInputError(suite, Path(root), problems, runnable(suite, set(counts)))
    if checked is not None:
        checked.commit()
    return counts


def load_task_samples(suite: Suite, root: Path, seed: int | None,
                      checked: AudioCheckCache | None = None) -> dict[str, TaskSamples]:
    """Every generated task's samples at once (small suites, tools); SuiteInputError lists every problem."""
    out: dict[str, TaskSamples] = {}
    check_suite_inputs(suite, root, seed, checked, check=lambda ts: out.__setitem__(ts.task.name, ts))
    return out
