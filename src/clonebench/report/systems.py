"""The systems ``clonebench compare`` compares: each one or more evaluated runs of the same pairs (seed replicates),
aligned pair by pair, and what makes two of them incomparable.

A command-line argument is ``[NAME=]PATH``. PATH is an evaluated run directory, a ``clonebench score`` output
(one task; a multi-model output folder gives one system per model), or a Hydra seed sweep
(``multirun-*`` with ``multirun.yaml``: its job runs are replicates of one system). Arguments with the same NAME
are replicates of one system (e.g. one model generated with three seeds and scored three times).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from clonebench.core.errors import ClonebenchError
from clonebench.report.tables import (
    UNSEEDED_NOTE,
    ResultTable,
    as_number,
    load_run,
    spec_shown,
)

# scorer-block keys that describe one scoring session, not the protocol
SESSION_KEYS = ("fingerprint", "batch_size", "asset_sources", "cached", "scored", "seconds")


@dataclass
class System:
    label: str
    runs: list[ResultTable] = field(default_factory=list)
    scorers: list[dict] = field(default_factory=list)  # scoring_manifest.json "scorers" of each run

    def values(self, metric: str, order: list[str]) -> np.ndarray:
        """(replicates, pairs) of ``metric`` in ``order`` (sample ids); NaN where a run has no value."""
        out = np.full((len(self.runs), len(order)), np.nan)
        for r, table in enumerate(self.runs):
            by_id = {row["sample_id"]: row for row in table.rows}
            for k, sample_id in enumerate(order):
                value = as_number(by_id.get(sample_id, {}).get(metric))
                if value is not None:
                    out[r, k] = value
        return out


def _run_dirs(path: Path) -> list[tuple[str | None, list[Path]]]:
    """(label or None, replicate run directories) found at ``path``."""
    if (path / "metrics.json").is_file() and (path / "scoring_manifest.json").is_file():
        return [(None, [path])]
    if (path / "score.json").is_file():
        summary = json.loads((path / "score.json").read_text(encoding="utf-8"))
        tasks = list(summary.get("tasks", {}))
        if len(tasks) != 1:
            first = summary["tasks"][tasks[0]].get("run_dir", tasks[0])
            raise ClonebenchError(f"{path} holds {len(tasks)} tasks {tasks}: compare one task, e.g. {path / first}")
        return [(summary.get("model"), [path / summary["tasks"][tasks[0]]["run_dir"]])]
    if (path / "multirun.yaml").is_file():
        jobs = [d for d in path.iterdir() if d.is_dir() and (d / "metrics.json").is_file()]
        if not jobs:
            raise ClonebenchError(f"{path}: a sweep without evaluated runs (score its jobs first)")
        return [(None, sorted(jobs, key=lambda d: (not d.name.isdigit(), int(d.name) if d.name.isdigit() else 0, d.name)))]
    if path.is_dir():
        outputs = sorted(d for d in path.iterdir() if d.is_dir() and (d / "score.json").is_file())
        if outputs:
            return [found for d in outputs for found in _run_dirs(d)]
    raise ClonebenchError(f"{path}: not an evaluated run, a clonebench score output, a seed sweep (multirun folder) "
                          "or a folder of score outputs")


def probe_path(text: str) -> bool:
    """Whether ``text`` names an existing file or folder. A string that cannot be a path (too long, a NUL byte, a
    symlink loop, a component that cannot be searched) is "not a path", never an exception."""
    try:
        return Path(text).exists()
    except (OSError, ValueError):
        return False


def _existing(spec: str, text: str) -> Path:
    """``text`` (the path part of ``spec``) as an existing path, or a ClonebenchError naming the spec and why."""
    try:
        path = Path(text)
        path.stat()
    except ValueError:
        raise ClonebenchError(f"{spec_shown(spec)}: not a run or folder (a path cannot hold a NUL byte)") from None
    except OSError as exc:
        why = "no such run or folder" if isinstance(exc, FileNotFoundError) else (exc.strerror or type(exc).__name__)
        raise ClonebenchError(f"{spec_shown(spec)}: {why}") from None
    return path


def load_systems(specs: list[str]) -> list[System]:
    """Systems in first-mentioned order; ``NAME=PATH`` names (and groups) them."""
    systems: dict[str, System] = {}
    for spec in specs:
        name, _, rest = spec.partition("=")
        explicit = bool(rest) and not probe_path(spec)
        path = _existing(spec, rest if explicit else spec)
        try:
            found_runs = [(label, run_dirs, system_of(name if explicit else label, run_dirs))
                          for label, run_dirs in _run_dirs(path)]
        except OSError as exc:
            raise ClonebenchError(f"{spec_shown(spec)}: cannot be read ({exc.strerror or type(exc).__name__})") from None
        for _, _, found in found_runs:
            label = found.label
            if not explicit and label in systems:
                label = found.label = f"{label} ({path.name})"
            system = systems.setdefault(label, System(label))
            system.runs += found.runs
            system.scorers += found.scorers
    return list(systems.values())


def system_of(label: str | None, run_dirs: list[Path]) -> System:
    """One system of evaluated runs (replicates); ``label`` defaults to the first run's name."""
    tables = [load_run(d) for d in run_dirs]
    system = System(label or tables[0].label)
    for directory, table in zip(run_dirs, tables):
        scoring = json.loads((Path(directory) / "scoring_manifest.json").read_text(encoding="utf-8"))
        system.runs.append(table)
        system.scorers.append(scoring.get("scorers", {}))
    return system


def unseeded_notes(systems: list[System]) -> list[str]:
    """A note per system with a run from a server that takes no seed or ignores it (the manifest's seeded false)."""
    out = []
    for system in systems:
        if any(t.unseeded_server for t in system.runs):
            out.append(f"{system.label}: {UNSEEDED_NOTE}")
    return out


def replicate_notes(systems: list[System]) -> list[str]:
    """Replicates that cannot be seed replicates: two runs of one system generated with the same seed."""
    out = []
    for system in systems:
        seen: dict[tuple, int] = {}
        for k, table in enumerate(system.runs):
            if not table.seeded:
                continue
            key = (table.seed_policy, table.seed)
            if key in seen:
                out.append(f"{system.label}: runs {seen[key] + 1} and {k + 1} were generated with the same seed "
                           f"{table.seed}: their difference is not seed variance")
            seen.setdefault(key, k)
    return out


def pair_order(systems: list[System]) -> tuple[list[str], list[str], list[str]]:
    """(sample ids in the first run's order, their speakers, their pair ids)."""
    rows = systems[0].runs[0].rows
    return [r["sample_id"] for r in rows], [str(r["speaker_id"]) for r in rows], [r["pair_id"] for r in rows]


def pair_differences(systems: list[System]) -> list[str]:
    """What makes the runs' pairs differ: sets of pairs, speakers, target texts, audio hashes (named)."""
    first = systems[0].runs[0]
    reference = {r["sample_id"]: r for r in first.rows}
    out = []
    for system in systems:
        for k, table in enumerate(system.runs):
            where = f"{system.label}" + (f" run {k + 1}" if len(system.runs) > 1 else "") + f" ({table.run_dir})"
            rows = {r["sample_id"]: r for r in table.rows}
            missing, extra = sorted(set(reference) - set(rows)), sorted(set(rows) - set(reference))
            if missing or extra:
                names = lambda ids, src: [src[i]["pair_id"] for i in ids[:5]]  # noqa: E731
                out.append(f"{where}: other pairs than {first.label} (lacks {names(missing, reference)}"
                           f"{'...' if len(missing) > 5 else ''}, has extra {names(extra, rows)})")
                continue
            for sample_id, row in rows.items():
                base = reference[sample_id]
                for key in ("speaker_id", "target_text", "target_sha256", "prompt_sha256"):
                    if row.get(key) and base.get(key) and str(row[key]) != str(base[key]):
                        out.append(f"{where}: pair {row['pair_id']}: {key} differs from {first.label}")
    return out[:20]


def _diff(a, b, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            if not prefix and key in SESSION_KEYS:
                continue
            out += _diff(a.get(key), b.get(key), f"{prefix}{key}.")
        return out
    return [] if a == b else [f"{prefix[:-1]} {_short(a)} vs {_short(b)}"]


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 90 else text[:60] + "..." + text[-25:]


def protocol_differences(systems: list[System], metrics: list[str], allow_mixed_precision: bool = False,
                         notes: list[str] | None = None) -> list[str]:
    """Per metric, every run whose scorer fingerprint differs from the first run's, with what differs.

    Scorers whose protocols agree but for their precision (float16 on a GPU vs float32), and so differ in device
    or execution only, are a difference unless ``allow_mixed_precision``; then they are a note in ``notes``."""
    from clonebench.evaluate.protocols.registry import METRIC_GROUPS

    out = []
    base_system, base = systems[0], systems[0].scorers[0]
    for metric in metrics:
        group = METRIC_GROUPS.get(metric)
        want = base.get(group, {})
        for system in systems:
            for k, (table, scorers) in enumerate(zip(system.runs, system.scorers)):
                have = scorers.get(group, {})
                if have.get("fingerprint") == want.get("fingerprint") and want.get("fingerprint"):
                    continue
                where = system.label + (f" run {k + 1}" if len(system.runs) > 1 else "")
                pa, pb = want.get("protocol") or {}, have.get("protocol") or {}
                changed = sorted(key for key in set(pa) | set(pb) if pa.get(key) != pb.get(key))
                if want.get("fingerprint") and have.get("fingerprint") and set(changed) <= {"precision"}:
                    precision = f"precision {pa.get('precision')} vs {pb.get('precision')}"
                    if allow_mixed_precision:
                        if notes is not None:
                            notes.append(f"{metric}: {where} was scored with {precision} or on another device; "
                                         "accepted (--allow-mixed-precision)")
                        continue
                    if changed:
                        out.append(f"{metric}: {where}: mixed precision ({precision}); re-score alike, or pass "
                                   "--allow-mixed-precision to compare anyway")
                        continue
                what = "; ".join(_diff(want, have)[:4]) or "scorer fingerprint missing"
                out.append(f"{metric}: {where} was scored differently from {base_system.label}: {what}")
    return list(dict.fromkeys(out))


def partial_runs(systems: list[System]) -> list[str]:
    return [f"{s.label}: {t.run_dir} is {t.status}" for s in systems for t in s.runs if t.status != "complete"]


def common_metrics(systems: list[System], candidates: tuple[str, ...]) -> list[str]:
    """The metrics (of ``candidates``, in order) that every run scored."""
    have = [set(t.metrics_summary) for s in systems for t in s.runs]
    return [m for m in candidates if all(m in h for h in have)]
