"""Per-sample tables of results: an evaluated run directory, or a plain JSON/CSV table (e.g. a historical file)."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from clonebench.core.cells import as_number
from clonebench.core.errors import ClonebenchError
from clonebench.core.redact import escape_terminal
from clonebench.core.runpaths import generation_run
from clonebench.data.identity import digest
from clonebench.evaluate.execution.progress import read_progress, unfinished_advice, unfinished_reason
from clonebench.evaluate.protocols.registry import ALSO_NEEDS

METRIC_COLUMNS = ("sim", "sva", "wer", "mcd", "dnsmos")
UNSEEDED_NOTE = "unseeded server: repeat runs give seed variance, not repeatability"


@dataclass
class ResultTable:
    label: str
    rows: list[dict]                                     # manifest order
    protocols: dict[str, dict] = field(default_factory=dict)   # metric -> scorer protocol
    fingerprints: dict[str, str] = field(default_factory=dict)  # metric -> scorer fingerprint
    executions: dict[str, dict] = field(default_factory=dict)  # metric -> scorer execution facts (device...)
    status: str | None = None                            # complete | partial | None (plain table)
    generation_status: str | None = None
    seed_policy: str | None = None
    seed: int | None = None
    seed_honoured: bool | None = None                    # False: the server ignored its seed (treated as no seed)
    seeded_recorded: bool | None = None                  # the manifest's ``seeded`` (None: written before it existed)
    seed_handling: str | None = None                     # the manifest's ``seed_handling`` (what the adapter knows)
    effective_sampling: dict | None = None               # the sampling the server applied (generation manifest)
    input_fingerprint: str | None = None
    metrics_summary: dict = field(default_factory=dict)
    failure_modes: dict | None = None                    # metrics.json's failure_modes (failures.rates), if scored
    dataset_manifest: str | None = None                  # the generation run's dataset.manifest_filename
    run_dir: Path | None = None
    notes: list[str] = field(default_factory=list)       # e.g. a historical baseline's limits

    @property
    def seeded(self) -> bool:
        """Outputs can be matched seed for seed: a seed was sent and the server did not ignore it."""
        return self.seed_policy not in (None, "not_supported", "unseeded") and self.seed_honoured is not False \
            and self.seeded_recorded is not False

    @property
    def unseeded_server(self) -> bool:
        """The server takes no seed, ignores it, or the determinism probe found it ignored (not a run without seed)."""
        return self.seed_policy == "not_supported" or self.seed_honoured is False or \
            (self.seeded_recorded is False and self.seed_policy not in (None, "unseeded"))

    @property
    def unseeded_why(self) -> str:
        """Why outputs cannot be matched seed for seed, in the words every record uses (manifest, gate, compare)."""
        return seed_reason(self.seed_policy, self.seed_honoured, self.seed_handling)

    def values(self, metric: str) -> list[float | None]:
        return [as_number(r.get(metric)) for r in self.rows]


def seed_reason(seed_policy: str | None, seed_honoured: bool | None, seed_handling: str | None) -> str:
    """Why a run is unseeded: what the adapter knows (no seed field, a seed the server ignores) before what the
    determinism probe saw (a seed that did not make identical requests give identical audio)."""
    if seed_policy == "not_supported" or (seed_handling or "").startswith("none"):
        return "the server takes no seed"
    if (seed_handling or "").startswith("sent, ignored"):
        return "the server ignores the seed it is sent (known for this server: seed_handling)"
    if seed_honoured is False and seed_policy not in (None, "unseeded"):
        return "the server did not honour the seed (determinism probe)"
    return "the run has no seed"


def load_run(run_dir: Path) -> ResultTable:
    """An evaluated run: generation_sample_metrics.csv + scoring_manifest.json (+ its generation run)."""
    run_dir = Path(run_dir)
    progress = read_progress(run_dir)
    reason = unfinished_reason(progress) if progress is not None else None
    if reason:  # killed (or still running) while scoring: whatever files it left are not its results
        raise ClonebenchError(f"{run_dir}: not an evaluated run: {reason}. {unfinished_advice(progress)}")
    needed = [run_dir / n for n in ("generation_sample_metrics.csv", "scoring_manifest.json", "metrics.json")]
    missing = [p.name for p in needed if not p.is_file()]
    if missing:
        raise ClonebenchError(f"{run_dir}: not an evaluated run (missing {missing}); run the evaluate phase first")
    scoring = json.loads(needed[1].read_text())
    metrics = json.loads(needed[2].read_text())
    with open(needed[0], newline="", encoding="utf-8") as handle:
        rows = [dict(r) for r in csv.DictReader(handle)]
    source = generation_run(run_dir, scoring.get("source_run"))
    generation = json.loads((source / "run_manifest.json").read_text()) if (source / "run_manifest.json").is_file() else {}
    prompts = {s["sample_id"]: s.get("prompt_sha256") for s in generation.get("samples", [])}
    for row in rows:
        row["prompt_sha256"] = prompts.get(row["sample_id"])
    groups = scoring.get("metric_groups", {})
    protocols = {m: scoring["scorers"][g].get("protocol", {}) for m, g in groups.items() if g in scoring["scorers"]}
    fingerprints = {m: scoring["scorers"][g]["fingerprint"] for m, g in groups.items() if g in scoring["scorers"]}
    executions = {m: scoring["scorers"][g].get("execution", {}) for m, g in groups.items() if g in scoring["scorers"]}
    for metric, others in ALSO_NEEDS.items():  # fail reads Whisper's values: its protocol is both groups'
        extra = [scoring["scorers"][g] for g in others if g in scoring["scorers"]]
        if metric in protocols and extra:
            protocols[metric] = {**protocols[metric], **{f"{b['scorer']}.{k}": v for b in extra
                                                         for k, v in b.get("protocol", {}).items()}}
            fingerprints[metric] = digest([fingerprints[metric], *(b["fingerprint"] for b in extra)])
    return ResultTable(label=scoring.get("run_name") or run_dir.name, rows=rows, protocols=protocols,
                       fingerprints=fingerprints, executions=executions, status=metrics["status"],
                       generation_status=generation.get("status"), seed_policy=generation.get("seed_policy"),
                       seed=generation.get("seed"), seed_honoured=generation.get("seed_honoured"),
                       seeded_recorded=generation.get("seeded"), seed_handling=generation.get("seed_handling"),
                       effective_sampling=generation.get("effective_sampling"),
                       input_fingerprint=metrics.get("input_fingerprint"),
                       metrics_summary=metrics["metrics"], failure_modes=metrics.get("failure_modes"),
                       dataset_manifest=((generation.get("config") or {}).get("dataset") or {})
                       .get("manifest_filename"),
                       run_dir=run_dir)


def spec_shown(spec: str, limit: int = 200) -> str:
    """A command-line spec as an error message may show it: control characters escaped, length bounded."""
    text = escape_terminal(str(spec))
    return text if len(text) <= limit else f"{text[:limit - 3]}... ({len(str(spec))} characters)"


def load_plain(path: Path) -> ResultTable:
    """A JSON list / object with "pairs" or "rows" / CSV of per-sample rows with pair_id, speaker_id and metrics.
    A path that cannot be probed or read (too long, a NUL byte, a symlink loop, no permission) is a
    ClonebenchError naming it (escaped, bounded), never a traceback."""
    try:
        return _load_plain(Path(path))
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError):
            raise ClonebenchError(f"{spec_shown(str(path))}: not JSON ({exc.msg})") from None
        if "\0" in str(path):
            raise ClonebenchError(f"{spec_shown(str(path))}: not a file or folder (a path cannot hold a NUL "
                                  "byte)") from None
        raise
    except OSError as exc:
        why = "no such file or folder" if isinstance(exc, FileNotFoundError) else (exc.strerror or type(exc).__name__)
        raise ClonebenchError(f"{spec_shown(str(path))}: {why}") from None


def _load_plain(path: Path) -> ResultTable:
    if path.is_dir():
        return load_run(path)
    if path.suffix.lower() == ".csv":
        with open(path, newline="", encoding="utf-8") as handle:
            return ResultTable(label=path.stem, rows=[dict(r) for r in csv.DictReader(handle)])
    payload = json.loads(path.read_text(encoding="utf-8"))
    rows = payload if isinstance(payload, list) else payload.get("pairs") or payload.get("rows")
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "pair_id" in r for r in rows):
        raise ClonebenchError(f"{path}: expected per-sample rows with pair_id (a list, or 'pairs'/'rows')")
    protocols = {m: s["protocol"] for m, s in payload.get("scorers", {}).items()
                 if isinstance(s, dict) and "protocol" in s} if isinstance(payload, dict) else {}
    label = payload.get("name", path.stem) if isinstance(payload, dict) else path.stem
    meta = payload if isinstance(payload, dict) else {}
    return ResultTable(label=label, rows=rows, protocols=protocols, notes=list(meta.get("limits", [])),
                       seed_policy="unseeded" if "seed" in meta and meta["seed"] is None else None)
