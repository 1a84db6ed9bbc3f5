"""What the HTML report shows of a run: its per-sample rows joined with the generation manifest (prompt,
target and generated audio), its provenance summary and its coverage. Everything here is data; the page
modules escape it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from clonebench.core.cells import as_number
from clonebench.core.runpaths import generation_run, run_files
from clonebench.evaluate.protocols.registry import UNVERIFIED
from clonebench.report.tables import ResultTable, load_run

# per-sample numbers the page can show, in this order (only those some run has are shown)
SAMPLE_METRICS = ("sim", "sva", "wer", "mcd", "dnsmos", "mos", "emotion_match", "generated_duration_s",
                  "synthesis_time_s")
HIGHER_IS_BETTER = {"sim": True, "sva": True, "wer": False, "mcd": False, "dnsmos": True, "mos": True,
                    "emotion_match": True, "fail": False}


@dataclass
class RunView:
    table: ResultTable
    generation: dict                     # run_manifest.json of the generation run ({} if missing)
    scoring: dict                        # scoring_manifest.json
    samples: dict[str, dict] = field(default_factory=dict)  # pair_id -> CSV row + prompt/target/generated paths
    notes: list[str] = field(default_factory=list)  # recorded files missing, old absolute paths read in this folder

    @property
    def label(self) -> str:
        return self.table.label


def _dataset_root(generation: dict) -> Path | None:
    dataset = generation.get("config", {}).get("dataset", {})
    if dataset.get("root_path"):
        return Path(dataset["root_path"])
    if dataset.get("manifest_filename"):
        return Path(dataset["manifest_filename"]).parent
    return None


def load_view(run_dir: Path) -> RunView:
    table = load_run(run_dir)
    scoring = json.loads((Path(run_dir) / "scoring_manifest.json").read_text(encoding="utf-8"))
    source = generation_run(run_dir, scoring.get("source_run"))
    files = run_files(run_dir, scoring.get("source_run"), f"{Path(run_dir) / 'generation_sample_metrics.csv'}")
    manifest_path = source / "run_manifest.json"
    generation = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.is_file() else {}
    root = _dataset_root(generation)
    by_sample = {s["sample_id"]: s for s in generation.get("samples", [])}
    view = RunView(table, generation, scoring)
    for row in table.rows:
        sample = by_sample.get(row["sample_id"], {})
        prompt = root / sample["prompt_file_name"] if root and sample.get("prompt_file_name") else None
        view.samples[row["pair_id"]] = {
            **row,
            "prompt_path": prompt if prompt and prompt.is_file() else None,
            "prompt_sha256": sample.get("prompt_sha256"),
            "target_path": Path(row["target_audio"]) if row.get("target_audio") else None,
            "generated_path": files.locate(row.get("generated_audio")),
        }
    view.notes += [n for n in (files.missing_note(len(table.rows)), files.rebased_note()) if n]
    if not manifest_path.is_file():
        view.notes.append(f"{run_dir}: the run it scored, {source}, is not here (moved or deleted); its prompts are "
                          "shown as not available")
    targets = [str(s["target_path"]) for s in view.samples.values() if s["target_path"] and not s["target_path"].is_file()]
    if targets:  # outside the run (the dataset, or the clip a derived task transformed): named as recorded
        view.notes.append(f"{run_dir}: {len(targets)} of {len(view.samples)} target clip(s) missing: "
                          f"{', '.join(targets[:5])}{', ...' if len(targets) > 5 else ''}")
    if root is not None and not root.is_dir():
        view.notes.append(f"{run_dir}: the dataset folder {root} its prompts and targets came from is not here; "
                          "their clips are shown as not available")
    return view


def shown_metrics(views: list[RunView]) -> list[str]:
    return [m for m in SAMPLE_METRICS if any(as_number(s.get(m)) is not None for v in views for s in v.samples.values())]


def provenance(view: RunView) -> dict:
    """The facts a reader checks before trusting numbers: server, checkpoints, scorers, device."""
    gen = view.generation
    gp = gen.get("generation_provenance", {})
    checkpoints = {}
    for key in ("service_code", "service_checkpoint", "service_codec_checkpoint"):
        record = gp.get(key)
        if isinstance(record, dict):
            checkpoints[key] = {k: record.get(k) for k in ("path", "sha256", "tree_sha256", "files") if k in record}
        elif record is not None:
            checkpoints[key] = record
    scorers = []
    for name, record in view.scoring.get("scorers", {}).items():
        assets = {f"{a.get('id')}@{a.get('revision')}": a.get("files", {}) for a in record.get("assets", [])}
        scorers.append({"scorer": name, "version": record.get("version"), "metrics": record.get("metrics"),
                        "verified": name not in UNVERIFIED, "assets": assets,
                        "fingerprint": record.get("fingerprint")})
    return {"run": view.label, "run_dir": str(view.table.run_dir), "phase": gen.get("phase"),
            "measure": gen.get("measure"), "seed_policy": gen.get("seed_policy"), "seed": gen.get("seed"),
            "seeded": gen.get("seeded"),
            "protocol": gp.get("protocol"), "endpoints": gp.get("endpoint_urls"),
            "server_record": gen.get("server_record"), "readiness": gen.get("readiness"),
            "checkpoints": checkpoints, "harness": gen.get("provenance", {}).get("harness"),
            "scoring_device": view.scoring.get("device"), "device_warning": view.scoring.get("device_warning"),
            "scorers": scorers}


def coverage(view: RunView) -> dict:
    gen = view.generation
    metrics = {m: {"n_valid": e.get("n_valid"), "n_requested": e.get("n_requested")}
               for m, e in view.table.metrics_summary.items() if isinstance(e, dict) and "n_valid" in e}
    return {"run": view.label, "generation_status": gen.get("status"), "generation_counts": gen.get("counts"),
            "evaluation_status": view.table.status, "metrics": metrics,
            "sample_errors": gen.get("sample_errors", [])[:20]}
