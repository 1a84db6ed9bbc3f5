"""The shards of a sweep, read and checked before anything is merged: which folders are shards, which resumed
which, whether they ran one config, whether every pair is finished; every refusal names the shard(s) and the
command that fixes it.
"""

from __future__ import annotations

import ast
import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from clonebench.core.dict_diff import leaf_differences
from clonebench.core.errors import ClonebenchError
from clonebench.generate.journal import MANIFEST_NAME, read_record, record_problem, samples_problem

FIX = "restore it (clonebench writes it) or re-run that shard"
MERGE_RECORD = "merge.json"

# Config keys that say how a shard was run or continued, not what it computes: merge compares every other key.
# vc.shard: the sharding itself; vc.resume_from: a resumed shard (or a resume chain) holds the same pairs made the
# same way (its generation fingerprint and the journal's checks guarantee it); vc.generate_only / vc.evaluate_only /
# vc.evaluation.generated_audio_dir: which phases one invocation ran (scoring is compared by scorer fingerprints);
# paths: where results and the hash cache are written (another node, another mount).
NOT_RUN_DEFINING = ("vc.shard", "vc.resume_from", "vc.generate_only", "vc.evaluate_only",
                    "vc.evaluation.generated_audio_dir", "paths")
# sample statuses a finished shard can hold; any other (pending, generating) is an unfinished pair
FINAL_SAMPLE = ("generated", "generation_failed", "input_failed")
UNFINISHED_RUN = ("running", "interrupted")


@dataclass
class Shard:
    folder: Path
    manifest: dict
    superseded: list[Path] = field(default_factory=list)   # earlier runs of its resume chain in the sweep

    @property
    def name(self) -> str:
        return self.folder.name


def shard_dirs(sweep: Path, exclude: Path | None = None) -> list[Path]:
    """The shard runs of ``sweep``: its subfolders with a run manifest, but merge outputs (``merge.json``, or the
    ``merged`` folder of an older clonebench), hidden folders (a merge being written) and ``exclude``."""
    sweep = Path(sweep)
    if not sweep.is_dir():
        raise ClonebenchError(f"{sweep}: no such sweep folder (give results/<run>/multirun-<stamp>-<id>)")
    skip = os.path.realpath(exclude) if exclude else None
    found = sorted((p.parent for p in sweep.glob(f"*/{MANIFEST_NAME}")
                    if p.parent.name != "merged" and not p.parent.name.startswith(".")
                    and not (p.parent / MERGE_RECORD).exists() and os.path.realpath(p.parent) != skip),
                   key=lambda p: (len(p.name), p.name))
    if not found:
        raise ClonebenchError(f"{sweep}: no shard runs (subfolders with {MANIFEST_NAME}); give the sweep folder "
                              "results/<run>/multirun-<stamp>-<id>")
    return found


def shard_record(path: Path, spec: dict, required: tuple[str, ...] = ()) -> dict:
    record = read_record(path, ClonebenchError, FIX)
    problem = record_problem(record, spec) or next((f"no {key!r}" for key in required if record.get(key) is None),
                                                   None)
    if problem:
        raise ClonebenchError(f"run record {path}: {problem}; {FIX}")
    return record


def shard_manifest(path: Path) -> dict:
    manifest = shard_record(path, {"config": (dict,), "config.vc": (dict,), "fingerprints": (dict,),
                                   "fingerprints.generation": (str,), "shard": (dict,), "shard.count": (int,),
                                   "errors": (list,)}, ("config", "samples"))
    problem = samples_problem(manifest["samples"])
    if not problem and not all(isinstance(e, str) for e in manifest.get("errors") or []):
        problem = "'errors' must be a list of strings"
    if not problem and any(s.get("status") is None for s in manifest["samples"]):
        problem = "a sample has no 'status'"
    if problem:
        raise ClonebenchError(f"run record {path}: {problem}; {FIX}")
    return manifest


def run_defining(config: dict) -> dict:
    """``config`` without the NOT_RUN_DEFINING keys (a copy)."""
    config = json.loads(json.dumps(config))
    for dotted in NOT_RUN_DEFINING:
        *parents, last = dotted.split(".")
        node = config
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(last, None)
    return config


def read_shards(sweep: Path, exclude: Path | None = None) -> list[Shard]:
    """The shards of ``sweep``, a resumed shard standing for the runs of its chain found in the sweep."""
    shards = [Shard(d, shard_manifest(d / MANIFEST_NAME)) for d in shard_dirs(sweep, exclude)]
    by_path = {os.path.realpath(s.folder): s for s in shards}
    replaced: set[str] = set()
    for shard in shards:
        current, seen = shard, set()
        while isinstance(current.manifest.get("resume_origin"), str) and current.folder not in seen:
            seen.add(current.folder)
            earlier = by_path.get(os.path.realpath(current.manifest["resume_origin"])) or _moved_origin(current, by_path)
            if earlier is None:
                break
            replaced.add(os.path.realpath(earlier.folder))
            shard.superseded.append(earlier.folder)
            current = earlier
    return [s for s in shards if os.path.realpath(s.folder) not in replaced]


def _moved_origin(shard: Shard, by_path: dict[str, Shard]) -> Shard | None:
    """The run ``shard`` resumed, in a sweep that was moved or copied since (the recorded origin is the old path):
    the sibling of that name when the shard was made beside its origin (its recorded ``run_dir``)."""
    origin, made_in = Path(shard.manifest["resume_origin"]), shard.manifest.get("run_dir")
    if not isinstance(made_in, str) or Path(made_in).parent != origin.parent:
        return None
    return by_path.get(os.path.realpath(shard.folder.parent / origin.name))


def check_configs(sweep: Path, shards: list[Shard]) -> dict:
    """Refuse shards whose run-defining config or generation fingerprint differs; the merged run's config."""
    configs = [run_defining(s.manifest["config"]) for s in shards]
    odd = [s.name for s, c in zip(shards, configs) if c != configs[0]]
    if odd:
        keys = sorted({k for s, c in zip(shards, configs) if c != configs[0] for k, _, _ in leaf_differences(configs[0], c)})
        raise ClonebenchError(
            f"{sweep}: shard(s) {', '.join(odd)} ran with another config than shard {shards[0].name} ({', '.join(keys)}; "
            f"{', '.join(NOT_RUN_DEFINING)} are not compared); merge the shards of one sweep only: move the odd "
            "shard(s) out of the folder, or re-run them with the sweep's config")
    generations = {s.manifest["fingerprints"]["generation"] for s in shards}
    if len(generations) != 1:
        odd = [s.name for s in shards if s.manifest["fingerprints"]["generation"] != shards[0].manifest[
            "fingerprints"]["generation"]]
        raise ClonebenchError(f"{sweep}: shard(s) {', '.join(odd)} have another generation fingerprint than shard "
                              f"{shards[0].name} (seed, request settings or service files differ); re-run them with "
                              "the sweep's settings")
    merged = json.loads(json.dumps(shards[0].manifest["config"]))  # the sweep's config, as no single shard ran it
    merged.get("vc", {}).pop("shard", None)
    if "resume_from" in merged.get("vc", {}):
        merged["vc"]["resume_from"] = None
    return merged


def check_finished(sweep: Path, shards: list[Shard]) -> None:
    """Refuse shards with unfinished pairs (pending, generating) or that stopped (interrupted, still running)."""
    lines = []
    for shard in shards:
        unfinished = [r.get("pair_id") for r in shard.manifest["samples"] if r.get("status") not in FINAL_SAMPLE]
        status = shard.manifest.get("status")
        if unfinished or status in UNFINISHED_RUN:
            shown = ", ".join(map(str, unfinished[:5])) + (", ..." if len(unfinished) > 5 else "")
            lines.append(f"  shard {shard.name} ({status}): {len(unfinished)} unfinished pair(s)"
                         f"{': ' + shown if unfinished else ''}; resume it: {resume_command(sweep, shard)}")
    if lines:
        raise ClonebenchError(f"{sweep}: {len(lines)} shard(s) did not finish, so the merge would pass unfinished "
                              "pairs as merged; nothing was written. Resume each (the resumed run goes into the "
                              "sweep, and merge takes it in place of the one it resumed), then merge again:\n"
                              + "\n".join(lines))


def _invocation(shard: Shard) -> tuple[str, list[str]] | None:
    """The config name and overrides the shard ran with (``config_source``: "configs/<name>.yaml with overrides
    [...]", written by run_vc.py); None when the source is not that."""
    source = str(shard.manifest.get("config_source") or "")
    name, _, rest = source.partition(".yaml with overrides ")
    try:
        overrides = ast.literal_eval(rest) if rest else None
    except (ValueError, SyntaxError):
        overrides = None
    if not name.startswith("configs/") or not isinstance(overrides, list):
        return None
    return name[len("configs/"):], [str(o) for o in overrides]


def _command(shard: Shard, drop: tuple[str, ...], extra: list[str]) -> str:
    invocation = _invocation(shard)
    if invocation is None:  # not run by run_vc.py: the shard's config is in its run_manifest.json
        return " ".join(["python run_vc.py --config-name <config> <the shard's overrides>", *map(shlex.quote, extra)])
    name, overrides = invocation
    kept = [o for o in overrides if not o.lstrip("+~").startswith(drop)]
    return " ".join(["python run_vc.py --config-name", shlex.quote(name), *map(shlex.quote, kept + extra)])


def resume_command(sweep: Path, shard: Shard) -> str:
    folder = Path(os.path.abspath(shard.folder))
    return _command(shard, ("vc.resume_from=", "hydra.", "hydra/"),
                    [f"vc.resume_from={folder}", f"hydra.run.dir={folder.parent / (shard.name + '-resumed')}"])


def missing_shard_command(sweep: Path, like: Shard, index: int) -> str:
    """The command that runs shard ``index`` into the sweep, with the overrides shard ``like`` ran with."""
    return _command(like, ("vc.shard.index=", "vc.resume_from=", "hydra.", "hydra/"),
                    [f"vc.shard.index={index}", f"hydra.run.dir={Path(os.path.abspath(sweep)) / str(index)}"])


def evaluate_command(shard: Shard) -> str:
    folder = Path(os.path.abspath(shard.folder))
    return _command(shard, ("vc.generate_only=", "vc.evaluate_only=", "vc.evaluation.generated_audio_dir=", "hydra.",
                            "hydra/"),
                    ["+vc.evaluate_only=true", f"+vc.evaluation.generated_audio_dir={folder / 'generated_audio'}",
                     f"hydra.run.dir={folder}"])
