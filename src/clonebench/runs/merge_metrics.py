"""The per-sample metrics of evaluated shards merged into one ``generation_sample_metrics.csv``, with ``metrics.json``
recomputed over all rows and the shards' common ``scoring_manifest.json``."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from clonebench.core.atomic import atomic_write_json
from clonebench.core.cells import as_number
from clonebench.core.confine import OutsideRunError
from clonebench.core.errors import ClonebenchError
from clonebench.core.runpaths import RunFiles, recorded
from clonebench.core.untrusted import UntrustedFileError, read_text
from clonebench.data.identity import input_fingerprint
from clonebench.runs.merge_shards import FIX, Shard, evaluate_command, shard_record

MAX_SAMPLE_METRICS_BYTES = 512 * 1024 * 1024  # a shard's generation_sample_metrics.csv larger than this is refused
SAMPLE_METRICS = "generation_sample_metrics.csv"


def _in_shard(value: str, shard: Shard, scoring: dict) -> str:
    """A shard's scored-WAV path as recorded in the merged run: relative to the run (the merged run has the shards'
    layout). An absolute path (older clonebench) is taken by its tail inside the shard; one outside it is refused."""
    if not value:
        return ""
    source = scoring.get("source_run") if isinstance(scoring.get("source_run"), dict) else {}
    files = RunFiles(shard.folder, [shard.manifest.get("run_dir"), source.get("run_dir")],
                     f"{shard.folder / SAMPLE_METRICS} generated_audio")
    try:
        path = files.locate(value, check=False)
    except OutsideRunError as exc:
        raise ClonebenchError(f"{exc}; re-evaluate shard {shard.name}: {evaluate_command(shard)}") from None
    rel = recorded(shard.folder, path)
    if rel is None or Path(rel).is_absolute():
        raise ClonebenchError(f"{files.what}: {value!r} is outside the shard {shard.folder}; re-evaluate shard "
                              f"{shard.name} into its own folder: {evaluate_command(shard)}")
    return rel


def merge_metrics(shards: list[Shard], everything, settings, out: Path) -> None:
    from clonebench.evaluate.outputs import write_csv
    from clonebench.stats.utterance import summarise

    scored = [s for s in shards if (s.folder / SAMPLE_METRICS).is_file()]
    if not scored:
        return
    if len(scored) != len(shards):
        unscored = [s for s in shards if s not in scored]
        raise ClonebenchError(f"only {len(scored)} of {len(shards)} shards were evaluated: shard(s) "
                              f"{', '.join(s.name for s in unscored)} have no {SAMPLE_METRICS}; evaluate each, then "
                              "merge again:\n" + "\n".join(f"  shard {s.name}: {evaluate_command(s)}" for s in unscored))
    scorings = [shard_record(s.folder / "scoring_manifest.json", {"scorers": (dict,)}, ("scorers",)) for s in shards]
    for shard, scoring in zip(shards, scorings):
        if not all(isinstance(p, dict) and "fingerprint" in p for p in scoring["scorers"].values()):
            raise ClonebenchError(f"run record {shard.folder / 'scoring_manifest.json'}: every entry of 'scorers' must "
                                  f"be an object with a 'fingerprint'; {FIX}")
    fingerprints = [{g: p["fingerprint"] for g, p in m["scorers"].items()} for m in scorings]
    odd = [s for s, f in zip(shards, fingerprints) if f != fingerprints[0]]
    if odd:
        raise ClonebenchError(f"shard(s) {', '.join(s.name for s in odd)} were scored differently from shard "
                              f"{shards[0].name} (scorer fingerprints differ: another device, thread count, batch size "
                              "or scorer version); re-score them alike before merging:\n"
                              + "\n".join(f"  shard {s.name}: {evaluate_command(s)}" for s in odd))
    rows = {}
    for shard, scoring in zip(shards, scorings):
        path = shard.folder / SAMPLE_METRICS
        try:
            text = read_text(path, max_bytes=MAX_SAMPLE_METRICS_BYTES, follow=False, what="sample metrics")
            reader = csv.DictReader(io.StringIO(text, newline=""))
            if not {"sample_id", "generated_audio"} <= set(reader.fieldnames or ()):
                raise ClonebenchError(f"{path}: no sample_id or generated_audio column; {FIX}")
            for row in reader:
                row.pop(None, None)  # cells beyond the header (a damaged row) are not a column
                row = {k: "" if v is None else v for k, v in row.items()}
                row["generated_audio"] = _in_shard(row["generated_audio"], shard, scoring)
                rows[row["sample_id"]] = row
        except UntrustedFileError as exc:
            raise ClonebenchError(f"{exc}; {FIX}") from None
        except csv.Error as exc:
            raise ClonebenchError(f"{path}: not a readable CSV ({exc}); {FIX}") from None
    missing = [s.pair_id for s in everything if s.sample_id not in rows]
    if missing:
        holders = sorted({s.name for s in shards for r in s.manifest["samples"] if r.get("pair_id") in missing})
        raise ClonebenchError(f"the {SAMPLE_METRICS} of shard(s) {', '.join(holders)} miss {len(missing)} sample(s) "
                              f"{missing[:5]}; re-evaluate those shards:\n" + "\n".join(
                                  f"  shard {s.name}: {evaluate_command(s)}" for s in shards if s.name in holders))
    ordered = [rows[s.sample_id] for s in everything]
    numeric = [{k: as_number(v) for k, v in r.items()} for r in ordered]
    evaluation = settings.evaluation
    summary = summarise(numeric, list(evaluation.metrics), len(ordered), evaluation.bootstrap_resamples,
                        evaluation.confidence, evaluation.bootstrap_seed, evaluation.seed)
    metrics = [shard_record(s.folder / "metrics.json", {"reasons": (list,)}, ("reasons",)) for s in shards]
    reasons = [r for m in metrics for r in m["reasons"]]
    if not all(isinstance(r, str) for r in reasons):
        raise ClonebenchError(f"a shard's metrics.json lists a reason that is not a string; {FIX}")
    write_csv(out / SAMPLE_METRICS, ordered)
    atomic_write_json(out / "metrics.json", {"status": "complete" if not reasons else "partial", "reasons": sorted(reasons),
                                             "n_requested": len(ordered), "metrics": summary,
                                             "scorer_fingerprints": fingerprints[0],
                                             "input_fingerprint": input_fingerprint(everything),
                                             "device": scorings[0]["device"]})
    scoring = {k: v for k, v in scorings[0].items() if k not in ("started_at", "finished_at", "source_run", "cache")}
    scoring["source_run"] = {"run_dir": ".", "merged_from_shards": True}  # the merged run itself
    atomic_write_json(out / "scoring_manifest.json", scoring)

