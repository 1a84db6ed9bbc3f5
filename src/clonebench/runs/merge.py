"""Merging the shard runs of one sweep into one run that does not depend on the shard count.

Every shard must come from the same config (but the shard keys) and generation fingerprint; together they
must hold every selected pair exactly once. The merged ``run_manifest.json`` lists the samples in manifest
order with the shards' outcomes; audio is hard-linked (or copied) and re-hashed; the journal holds each
sample's events in manifest order; evaluated shards give one ``generation_sample_metrics.csv`` and a
``metrics.json`` recomputed over all rows. What depends on the sharding (the shard folders) goes to
``merge.json`` only, so merging 1, 2 or 3 shards gives the same manifest but for timestamps and paths.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path

from omegaconf import OmegaConf

from clonebench.core.atomic import atomic_write_json, atomic_write_text
from clonebench.core.cells import as_number
from clonebench.core.confine import inside
from clonebench.core.errors import ClonebenchError
from clonebench.core.hashing import sha256_file
from clonebench.core.untrusted import UntrustedFileError, read_text
from clonebench.data.identity import input_fingerprint
from clonebench.generate.journal import (
    JOURNAL_NAME,
    MANIFEST_NAME,
    read_events,
    read_record,
    record_problem,
    samples_problem,
)

VOLATILE = ("created_at", "updated_at", "finished_at", "run_dir", "config_source")


def shard_dirs(sweep: Path) -> list[Path]:
    found = sorted((p.parent for p in Path(sweep).glob(f"*/{MANIFEST_NAME}") if p.parent.name != "merged"),
                   key=lambda p: (len(p.name), p.name))
    if not found:
        raise ClonebenchError(f"{sweep}: no shard runs (subfolders with {MANIFEST_NAME})")
    return found


MAX_SAMPLE_METRICS_BYTES = 512 * 1024 * 1024  # a shard's generation_sample_metrics.csv larger than this is refused
_FIX = "restore it (clonebench writes it) or re-run that shard"


def _shard_record(path: Path, spec: dict, required: tuple[str, ...] = ()) -> dict:
    record = read_record(path, ClonebenchError, _FIX)
    problem = record_problem(record, spec) or next((f"no {key!r}" for key in required if record.get(key) is None),
                                                   None)
    if problem:
        raise ClonebenchError(f"run record {path}: {problem}; {_FIX}")
    return record


def _shard_manifest(path: Path) -> dict:
    manifest = _shard_record(path, {"config": (dict,), "config.vc": (dict,), "fingerprints": (dict,),
                                    "fingerprints.generation": (str,), "shard": (dict,), "shard.count": (int,), "errors": (list,)},
                             ("config", "samples"))
    problem = samples_problem(manifest["samples"])
    if not problem and not all(isinstance(e, str) for e in manifest.get("errors") or []):
        problem = "'errors' must be a list of strings"
    if not problem and any(s.get("status") is None for s in manifest["samples"]):
        problem = "a sample has no 'status'"
    if problem:
        raise ClonebenchError(f"run record {path}: {problem}; {_FIX}")
    return manifest


def _normalised_config(manifest: dict) -> dict:
    config = json.loads(json.dumps(manifest["config"]))
    config.get("vc", {}).pop("shard", None)
    return config


def merge(sweep: Path, output: Path | None = None) -> Path:
    from clonebench.config.settings import read_settings
    from clonebench.data.selection import load_all_samples

    shards = shard_dirs(sweep)
    manifests = [_shard_manifest(d / MANIFEST_NAME) for d in shards]
    configs = [_normalised_config(m) for m in manifests]
    if any(c != configs[0] for c in configs):
        raise ClonebenchError(f"{sweep}: the shards ran with different configs (beyond vc.shard); merge one sweep only")
    generations = {m.get("fingerprints", {}).get("generation") for m in manifests}
    if len(generations) != 1 or None in generations:
        raise ClonebenchError(f"{sweep}: the shards' generation fingerprints differ or are missing: {generations}")
    counts = {m.get("shard", {}).get("count") for m in manifests}
    settings = read_settings(OmegaConf.create(configs[0]), f"{shards[0] / MANIFEST_NAME} (config)")
    everything = load_all_samples(settings)
    owner: dict[str, Path] = {}
    rows: dict[str, dict] = {}
    for shard, manifest in zip(shards, manifests):
        for row in manifest["samples"]:
            if row["sample_id"] in owner:
                raise ClonebenchError(f"{sweep}: sample {row['pair_id']} is in both {owner[row['sample_id']].name} and "
                                      f"{shard.name} (overlapping shards; counts seen: {sorted(map(str, counts))})")
            owner[row["sample_id"]] = shard
            rows[row["sample_id"]] = row
    missing = [s.pair_id for s in everything if s.sample_id not in owner]
    extra = sorted(set(owner) - {s.sample_id for s in everything})
    if missing or extra:
        raise ClonebenchError(f"{sweep}: shards miss {len(missing)} pair(s) {missing[:5]} and hold {len(extra)} unknown; "
                              "run the missing shards (or resume them) before merging")
    out = Path(output) if output else Path(sweep) / "merged"
    sources = {sid: inside(owner[sid], row["audio_path"], f"{owner[sid] / MANIFEST_NAME} ({row.get('pair_id')})")
               for sid, row in rows.items() if row.get("audio_path")}  # every path checked before anything is written
    _replaceable(out)
    (out / "generated_audio").mkdir(parents=True)
    ordered = []
    for sample in everything:
        row = dict(rows[sample.sample_id])
        row.pop("reused_from", None)
        if row.get("audio_path"):
            source = sources[sample.sample_id]
            dest = inside(out, row["audio_path"], f"{owner[sample.sample_id] / MANIFEST_NAME} ({row.get('pair_id')})")
            if dest.exists() or dest.is_symlink():
                raise ClonebenchError(f"{dest}: two samples name the same audio_path {row['audio_path']!r}; the "
                                      "shard manifests were edited")
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, dest)
            except OSError:
                shutil.copyfile(source, dest)
            if sha256_file(dest) != row["audio_sha256"]:
                raise ClonebenchError(f"{source} changed since it was generated (sha256 differs from its journal)")
        ordered.append(row)
    statuses = [r["status"] for r in ordered]
    generated = statuses.count("generated")
    status = "generated" if generated == len(ordered) else "partial" if generated else "failed"
    base = manifests[0]
    merged = {k: v for k, v in base.items() if k not in VOLATILE + ("samples", "counts", "errors", "sample_errors",
                                                                    "status", "shard", "fingerprints", "config")}
    merged.update(config=configs[0], status=status,
                  fingerprints={"input": input_fingerprint(everything), "generation": base["fingerprints"]["generation"]},
                  counts={s: statuses.count(s) for s in sorted(set(statuses))},
                  errors=sorted({e for m in manifests for e in m.get("errors", [])}),
                  sample_errors=[e for r in ordered for e in [{"pair_id": r["pair_id"], "sample_id": r["sample_id"],
                                                                 "error_class": r.get("error_class"),
                                                                 "error": r.get("error")}]
                                 if r["status"] == "generation_failed"],
                  samples=ordered)
    if any("seed_honoured" in m for m in manifests):  # each shard probed its own server: honoured only if all were
        verdicts = [m.get("seed_honoured") for m in manifests]
        merged["seed_honoured"] = False if False in verdicts else None if None in verdicts else True
    atomic_write_json(out / MANIFEST_NAME, merged)
    _merge_journals(shards, everything, owner, out)
    _merge_metrics(shards, everything, owner, settings, out)
    atomic_write_json(out / "merge.json", {"sweep": str(sweep), "shards": [str(s) for s in shards],
                                           "shard_count": sorted(map(str, counts)), "samples": len(ordered),
                                           "config_sources": [m.get("config_source") for m in manifests]})
    return out


def _replaceable(out: Path) -> None:
    """Remove an earlier merge output at ``out``; anything else there is refused, never deleted."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise ClonebenchError(f"merge output {out} is a file or a link: give a new folder (--output)")
    if out.is_dir() and any(out.iterdir()):
        if not (out / "merge.json").is_file():
            raise ClonebenchError(f"merge output {out} is not a merge output (no merge.json) and not empty: it is left "
                                  "as it is; give a new folder (--output)")
        shutil.rmtree(out)
    elif out.is_dir():
        out.rmdir()


def _rebased(value: str, shard: Path, out: Path) -> str:
    """A shard's scored-WAV path as the same file in the merged run (refused unless inside the shard)."""
    if not value:
        return ""
    path, where = Path(value), f"{shard / 'generation_sample_metrics.csv'} generated_audio"
    try:
        rel = path.relative_to(shard) if path.is_absolute() else path
    except ValueError:
        raise ClonebenchError(f"{where}: {value!r} is outside the shard {shard}") from None
    inside(shard, rel, where)
    return str(out / rel)


def _merge_journals(shards: list[Path], everything, owner: dict, out: Path) -> None:
    events = {s: [e for e in read_events(s / JOURNAL_NAME) if e.get("sample_id")] for s in shards}
    lines = []
    for sample in everything:
        lines += [json.dumps(e, ensure_ascii=False) for e in events[owner[sample.sample_id]]
                  if e["sample_id"] == sample.sample_id]
    atomic_write_text(out / JOURNAL_NAME, "".join(line + "\n" for line in lines))


def _merge_metrics(shards: list[Path], everything, owner: dict, settings, out: Path) -> None:
    from clonebench.evaluate.outputs import write_csv
    from clonebench.stats.utterance import summarise

    scored = [s for s in shards if (s / "generation_sample_metrics.csv").is_file()]
    if not scored:
        return
    if len(scored) != len(shards):
        raise ClonebenchError(f"only {len(scored)} of {len(shards)} shards were evaluated; evaluate them all first")
    scorings = [_shard_record(s / "scoring_manifest.json", {"scorers": (dict,)}, ("scorers",)) for s in shards]
    for shard, scoring in zip(shards, scorings):
        if not all(isinstance(p, dict) and "fingerprint" in p for p in scoring["scorers"].values()):
            raise ClonebenchError(f"run record {shard / 'scoring_manifest.json'}: every entry of 'scorers' must be an "
                                  f"object with a 'fingerprint'; {_FIX}")
    fingerprints = [{g: p["fingerprint"] for g, p in m["scorers"].items()} for m in scorings]
    if any(f != fingerprints[0] for f in fingerprints):
        raise ClonebenchError("the shards were scored differently (scorer fingerprints differ: another device, "
                              "thread count, batch size or scorer version); re-score them alike before merging")
    rows = {}
    for shard in shards:
        path = shard / "generation_sample_metrics.csv"
        try:
            text = read_text(path, max_bytes=MAX_SAMPLE_METRICS_BYTES, follow=False, what="sample metrics")
            reader = csv.DictReader(io.StringIO(text, newline=""))
            if not {"sample_id", "generated_audio"} <= set(reader.fieldnames or ()):
                raise ClonebenchError(f"{path}: no sample_id or generated_audio column; {_FIX}")
            for row in reader:
                row.pop(None, None)  # cells beyond the header (a damaged row) are not a column
                row = {k: "" if v is None else v for k, v in row.items()}
                row["generated_audio"] = _rebased(row["generated_audio"], shard, out)
                rows[row["sample_id"]] = row
        except UntrustedFileError as exc:
            raise ClonebenchError(f"{exc}; {_FIX}") from None
        except csv.Error as exc:
            raise ClonebenchError(f"{path}: not a readable CSV ({exc}); {_FIX}") from None
    missing = [s.pair_id for s in everything if s.sample_id not in rows]
    if missing:
        raise ClonebenchError(f"the shards' generation_sample_metrics.csv miss {len(missing)} sample(s) "
                              f"{missing[:5]}; re-evaluate those shards")
    ordered = [rows[s.sample_id] for s in everything]
    numeric = [{k: as_number(v) for k, v in r.items()} for r in ordered]
    evaluation = settings.evaluation
    summary = summarise(numeric, list(evaluation.metrics), len(ordered), evaluation.bootstrap_resamples,
                        evaluation.confidence, evaluation.bootstrap_seed, evaluation.seed)
    metrics = [_shard_record(s / "metrics.json", {"reasons": (list,)}, ("reasons",)) for s in shards]
    reasons = [r for m in metrics for r in m["reasons"]]
    if not all(isinstance(r, str) for r in reasons):
        raise ClonebenchError(f"a shard's metrics.json lists a reason that is not a string; {_FIX}")
    write_csv(out / "generation_sample_metrics.csv", ordered)
    atomic_write_json(out / "metrics.json", {"status": "complete" if not reasons else "partial", "reasons": sorted(reasons),
                                             "n_requested": len(ordered), "metrics": summary,
                                             "scorer_fingerprints": fingerprints[0],
                                             "input_fingerprint": input_fingerprint(everything),
                                             "device": scorings[0]["device"]})
    scoring = {k: v for k, v in scorings[0].items() if k not in ("started_at", "finished_at", "source_run", "cache")}
    scoring["source_run"] = {"run_dir": str(out), "merged_from_shards": True}
    atomic_write_json(out / "scoring_manifest.json", scoring)

