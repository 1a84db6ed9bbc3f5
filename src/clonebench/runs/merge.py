"""Merging the shard runs of one sweep into one run that does not depend on the shard count.

Every shard must come from the same run-defining config (``merge_shards.NOT_RUN_DEFINING`` are not compared) and
generation fingerprint, and be finished; a resumed shard in the sweep stands for the runs of its resume chain;
together they must hold every selected pair exactly once. The merged ``run_manifest.json`` lists the samples in
manifest order with the shards' outcomes; audio is hard-linked (or copied) and re-hashed; the journal holds each
sample's events in manifest order; evaluated shards give one ``generation_sample_metrics.csv`` (paths relative to
the merged run) and a ``metrics.json`` recomputed over all rows (``merge_metrics.py``). What is each shard's own
(folder, index, status, resume chain, provenance such as a cluster job's) is listed under ``shards``, and the sweep
in ``merge.json``, so merging 1, 2 or 3 shards gives the same manifest but for those and timestamps.
The merge is written into a hidden folder beside the output and renamed into place when complete.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

from omegaconf import OmegaConf

from clonebench.core.atomic import atomic_write_json, atomic_write_text, fsync_dir
from clonebench.core.confine import inside
from clonebench.core.errors import ClonebenchError
from clonebench.core.hashing import sha256_file
from clonebench.data.identity import input_fingerprint
from clonebench.generate.journal import JOURNAL_NAME, MANIFEST_NAME, read_events
from clonebench.runs.merge_metrics import merge_metrics
from clonebench.runs.merge_shards import (
    MERGE_RECORD,
    Shard,
    check_configs,
    check_finished,
    missing_shard_command,
    read_shards,
    shard_dirs,
)

__all__ = ["merge", "shard_dirs"]
log = logging.getLogger(__name__)

VOLATILE = ("created_at", "updated_at", "finished_at", "run_dir", "config_source")
# a shard's own facts (where and how it ran): listed per shard in the merged manifest's "shards", never merged
PER_SHARD = ("shard", "resume_origin", "resumed_from", "cluster", "provenance", "run_dir", "config_source",
             "created_at", "finished_at", "status", "counts")
MERGED_OWN = ("samples", "counts", "errors", "sample_errors", "status", "shard", "fingerprints", "config", "shards")


def merge(sweep: Path, output: Path | None = None) -> Path:
    """Merge the shards of ``sweep`` into ``output`` (default ``sweep/merged``). Everything is written into a
    hidden folder beside the output and renamed into place when complete: a refusal or a crash leaves the output
    as it was (an earlier merge is replaced only by a complete one)."""
    from clonebench.config.settings import read_settings
    from clonebench.data.selection import load_all_samples

    sweep = Path(sweep)
    out = Path(output) if output else sweep / "merged"
    _check_output(out)
    shards = read_shards(sweep, exclude=out)
    config = check_configs(sweep, shards)
    check_finished(sweep, shards)
    counts = {s.manifest["shard"].get("count") for s in shards}
    settings = read_settings(OmegaConf.create(config), f"{shards[0].folder / MANIFEST_NAME} (config)")
    everything = load_all_samples(settings)
    owner: dict[str, Shard] = {}
    rows: dict[str, dict] = {}
    for shard in shards:
        for row in shard.manifest["samples"]:
            if row["sample_id"] in owner:
                raise ClonebenchError(f"{sweep}: sample {row['pair_id']} is in both shard {owner[row['sample_id']].name}"
                                      f" and shard {shard.name} (overlapping shards; counts seen: "
                                      f"{sorted(map(str, counts))}); move the shard that does not belong to this "
                                      "sweep out of the folder")
            owner[row["sample_id"]] = shard
            rows[row["sample_id"]] = row
    missing = [s.pair_id for s in everything if s.sample_id not in owner]
    extra = sorted(set(owner) - {s.sample_id for s in everything})
    if missing or extra:
        present = sorted({i for s in shards if isinstance(i := s.manifest["shard"].get("index"), int)})
        count = next(iter(counts)) if len(counts) == 1 else None
        absent = [i for i in range(count) if i not in present] if isinstance(count, int) else []
        fixes = [f"  shard {i}: {missing_shard_command(sweep, shards[0], i)}" for i in absent] or [
            f"  python run_vc.py ... vc.shard.count={count} vc.shard.index=<i> hydra.run.dir={os.path.abspath(sweep)}/<i>"]
        raise ClonebenchError(
            f"{sweep}: shards miss {len(missing)} pair(s) {missing[:5]} and hold {len(extra)} unknown "
            f"(shard indices present: {present}{f'; absent: {absent}' if absent else ''}); run the missing shard(s) "
            "into this sweep folder, then merge again:\n" + "\n".join(fixes))
    sources = {sid: inside(owner[sid].folder, row["audio_path"], f"{owner[sid].folder / MANIFEST_NAME} ({row.get('pair_id')})")
               for sid, row in rows.items() if row.get("audio_path")}  # every path checked before anything is written
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.merging-", dir=out.parent))
    try:
        _write(work, sweep, shards, everything, owner, rows, sources, config, settings, counts)
        _place(work, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _write(out: Path, sweep: Path, shards: list[Shard], everything, owner: dict, rows: dict, sources: dict,
           config: dict, settings, counts: set) -> None:
    (out / "generated_audio").mkdir(parents=True)
    ordered = []
    for sample in everything:
        row = dict(rows[sample.sample_id])
        row.pop("reused_from", None)
        if row.get("audio_path"):
            source = sources[sample.sample_id]
            where = f"{owner[sample.sample_id].folder / MANIFEST_NAME} ({row.get('pair_id')})"
            dest = inside(out, row["audio_path"], where)
            if dest.exists() or dest.is_symlink():
                raise ClonebenchError(f"{where}: two samples name the same audio_path {row['audio_path']!r}; the "
                                      "shard manifests were edited")
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, dest)
            except OSError:
                shutil.copyfile(source, dest)
            if sha256_file(dest) != row["audio_sha256"]:
                raise ClonebenchError(f"{source} changed since it was generated (sha256 differs from its journal); "
                                      f"resume shard {owner[sample.sample_id].name} to make it again")
        ordered.append(row)
    statuses = [r["status"] for r in ordered]
    generated = statuses.count("generated")
    status = "generated" if generated == len(ordered) else "partial" if generated else "failed"
    manifests = [s.manifest for s in shards]
    base = manifests[0]
    merged = {k: v for k, v in base.items() if k not in VOLATILE + PER_SHARD + MERGED_OWN
              and all(m.get(k) == v for m in manifests)}
    merged.update(config=config, status=status,
                  fingerprints={"input": input_fingerprint(everything), "generation": base["fingerprints"]["generation"]},
                  counts={s: statuses.count(s) for s in sorted(set(statuses))},
                  errors=sorted({e for m in manifests for e in m.get("errors", [])}),
                  sample_errors=[e for r in ordered for e in [{"pair_id": r["pair_id"], "sample_id": r["sample_id"],
                                                                 "error_class": r.get("error_class"),
                                                                 "error": r.get("error")}]
                                 if r["status"] == "generation_failed"],
                  shards=[_shard_entry(s, manifests) for s in shards],
                  samples=ordered)
    if any("seed_honoured" in m for m in manifests):  # each shard probed its own server: honoured only if all were
        verdicts = [m.get("seed_honoured") for m in manifests]
        merged["seed_honoured"] = False if False in verdicts else None if None in verdicts else True
    atomic_write_json(out / MANIFEST_NAME, merged)
    _merge_journals(shards, everything, owner, out, status, merged["counts"])
    merge_metrics(shards, everything, settings, out)
    atomic_write_json(out / MERGE_RECORD, {"sweep": os.path.abspath(sweep), "shards": [s.name for s in shards],
                                           "superseded": {s.name: [p.name for p in s.superseded]
                                                          for s in shards if s.superseded},
                                           "shard_count": sorted(map(str, counts)), "samples": len(ordered),
                                           "config_sources": [s.manifest.get("config_source") for s in shards]})


def _shard_entry(shard: Shard, manifests: list[dict]) -> dict:
    """A shard's own record in the merged manifest: its folder (relative to the sweep), the runs of its resume chain
    it stands for, and every top-level block of its manifest that is its own (PER_SHARD, or any other key whose
    value differs between shards, e.g. a cluster job's provenance)."""
    own = {k: v for k, v in shard.manifest.items() if k != "run_dir" and (
        k in PER_SHARD or (k not in MERGED_OWN and any(m.get(k) != v for m in manifests)))}
    return {"folder": shard.name, "superseded": [p.name for p in shard.superseded], **own}


def _check_output(out: Path) -> None:
    """Refuse an output that is not a merge output; an older merge is replaced (by _place) only once the new one is
    complete. A ``merged`` folder half-written by an older clonebench (no merge.json; only files a merge writes)
    is replaced too, and said so."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise ClonebenchError(f"merge output {out} is a file or a link: give a new folder (--output)")
    if out.is_dir() and any(out.iterdir()) and not (out / MERGE_RECORD).is_file() and not _stale_merge(out):
        raise ClonebenchError(f"merge output {out} is not a merge output (no {MERGE_RECORD}) and holds files a merge "
                              "does not write: it is left as it is; move it away or give a new folder (--output)")


MERGE_FILES = {MANIFEST_NAME, JOURNAL_NAME, "generated_audio", "generation_sample_metrics.csv", "metrics.json",
               "scoring_manifest.json"}


def _stale_merge(out: Path) -> bool:
    """A merge output an older clonebench left half-written (it wrote merge.json last, into the output itself):
    only the files a merge writes, and WAVs under generated_audio."""
    if not {p.name for p in out.iterdir()} <= MERGE_FILES:
        return False
    return all(p.is_dir() or p.suffix == ".wav" for p in (out / "generated_audio").rglob("*"))


def _place(work: Path, out: Path) -> None:
    """Rename the complete merge ``work`` to ``out``; an earlier merge there is moved aside first and removed after."""
    old = None
    if out.is_dir():
        if not (out / MERGE_RECORD).is_file():
            log.warning("%s: a merge output without %s (left half-written by an older clonebench) is replaced", out,
                        MERGE_RECORD)
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.replaced-", dir=out.parent))
        os.replace(out, old / out.name)
    try:
        os.rename(work, out)
    except OSError:
        if old is not None:
            os.replace(old / out.name, out)
        raise
    fsync_dir(out.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _merge_journals(shards: list[Shard], everything, owner: dict, out: Path, status: str, counts: dict) -> None:
    """Each pair's events from the shard that owns it, in manifest order, then one ``run_end`` with the merged
    status: the shards' own run_end events describe each job, not the merged run (``clonebench status`` reads it)."""
    by_sample: dict[tuple[str, str], list[str]] = {}  # (shard, sample id) -> its events, in journal order
    ends = []
    for shard in shards:  # each journal read once
        for event in read_events(shard.folder / JOURNAL_NAME):
            if event.get("sample_id"):
                by_sample.setdefault((shard.name, event["sample_id"]), []).append(json.dumps(event, ensure_ascii=False))
            elif event.get("event") == "run_end":
                ends.append(event["ts"])
    lines = [line for sample in everything
             for line in by_sample.get((owner[sample.sample_id].name, sample.sample_id), [])]
    lines.append(json.dumps({"event": "run_end", "ts": max(ends, default=0.0), "status": status, "counts": counts,
                             "error": None, "merged_from": [s.name for s in shards]}, ensure_ascii=False))
    atomic_write_text(out / JOURNAL_NAME, "".join(line + "\n" for line in lines))
