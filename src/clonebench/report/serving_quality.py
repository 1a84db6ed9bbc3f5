"""Quality under load of a serving run, scored: its answers that are not byte-identical to the same request's answer
sent alone (kept under ``under_load/``) against that answer (SIM) and against the text asked for (WER, beside the
WER of the answers alone). The scoring itself is ``clonebench.metrics.score_under_load`` (the evaluate phase's
scorers); this module picks the pairs and adds up the values, written as ``serving_quality.json``."""

from __future__ import annotations

from pathlib import Path
from statistics import mean

from clonebench.core.confine import inside
from clonebench.report.serving import load_serving

OUTPUT = "serving_quality.json"


def changed_pairs(run_dir: Path) -> tuple[dict, list[tuple[int, Path, Path, dict]]]:
    """(serving.json, [(level index, answer under load, answer alone, {text, language})]); paths stay in the run."""
    data = load_serving(run_dir)
    texts = data.get("texts") or {}
    jobs = []
    for index, level in enumerate(data["levels"]):
        for pair in (level["summary"].get("outputs_vs_alone") or {}).get("differing", []):
            info = texts.get(pair["sample_id"])
            if pair.get("wav") and info is not None:
                jobs.append((index, inside(run_dir, pair["wav"], "serving.json differing wav"),
                             inside(run_dir, pair["alone_wav"], "serving.json alone_wav"), info))
    return data, jobs


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return mean(values) if values else None


def per_level(data: dict, jobs: list, under_load: list[dict], alone: list[dict]) -> list[dict]:
    """Per level: how many changed answers were scored, SIM to the answer alone (mean, min), WER under load and
    alone (means over the same pairs; None when not scored)."""
    out = []
    for index, level in enumerate(data["levels"]):
        mine = [k for k, job in enumerate(jobs) if job[0] == index]
        sims = [under_load[k].get("sim") for k in mine if under_load[k].get("sim") is not None]
        out.append({"mode": level["mode"], "level": level["level"], "scored": len(mine),
                    "sim_to_alone_mean": _mean(sims), "sim_to_alone_min": min(sims, default=None),
                    "wer_under_load": _mean([under_load[k].get("wer") for k in mine]),
                    "wer_alone": _mean([alone[k].get("wer") for k in mine])})
    return out
