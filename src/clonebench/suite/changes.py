"""Per task with an ``anchor`` (its clean counterpart): the change against the anchor task, two ways.

- **upstream** (rvcbench 2.2.1 ``relative_change``, as in the paper): 100 x (task mean - anchor mean) / |anchor mean|
  over the two tasks' own means, only when both tasks are complete. The tasks may hold different pairs: it is an
  unpaired comparison of two means.
- **paired** (clonebench): per metric, over the source pairs both tasks hold (same ``pair_id``: same speaker, same
  target text, a different reference condition) with a valid value in both, the mean of task - anchor, its
  speaker-cluster bootstrap 95 % CI (``stats.paired``), and the same as a percentage of the anchor's mean over
  those pairs. Tasks with no shared pair (e.g. textshift-hallucination vs textshift-standard) have none, and say so.

Complete tasks also get upstream's ``means`` and ``group_means`` (plain sums over every row), as submission.json
carries them.
"""

from __future__ import annotations

import numpy as np

from clonebench.stats.paired import BOOTSTRAP_DRAWS, BOOTSTRAP_SEED, speaker_cluster_ci
from clonebench.suite.upstream_coverage import group_means, metric_means, relative_change

UPSTREAM_LABEL = "upstream: rvcbench relative_change, 100 x (task mean - anchor mean) / |anchor mean|, unpaired means"
PAIRED_LABEL = (f"paired: mean of task - anchor over shared source pairs, speaker-cluster bootstrap 95 % CI "
                f"({BOOTSTRAP_DRAWS} draws, seed {BOOTSTRAP_SEED})")


def paired_change(task_rows: list[dict], anchor_rows: list[dict], metric: str) -> dict | None:
    anchor = {r["pair_id"]: r for r in anchor_rows if r.get(metric) is not None}
    shared = [(r, anchor[r["pair_id"]]) for r in task_rows if r.get(metric) is not None and r["pair_id"] in anchor]
    if not shared:
        return None
    deltas = [t[metric] - a[metric] for t, a in shared]
    speakers = [t["speaker_id"] for t, _ in shared]
    base = float(np.mean([a[metric] for _, a in shared]))
    ci = speaker_cluster_ci(deltas, speakers) if len(shared) > 1 else None
    scale = 100.0 / abs(base) if base else None
    return {"n_pairs": len(shared), "n_speakers": len(set(speakers)), "anchor_mean": base,
            "task_mean": float(np.mean([t[metric] for t, _ in shared])), "delta": float(np.mean(deltas)),
            "delta_ci95": ci, "percent": None if scale is None else float(np.mean(deltas)) * scale,
            "percent_ci95": None if scale is None or ci is None else [ci[0] * scale, ci[1] * scale]}


def attach_changes(results) -> None:
    for task in results.tasks:
        if task.status == "complete":
            task.means = metric_means(task.rows, task.required)
            if task.task.group_by:
                task.group_means = {c: group_means(task.rows, task.required, task.group_values, c)
                                    for c in task.task.group_by}
    for task in results.tasks:
        if not task.task.anchor:
            continue
        anchor = results.task(task.task.anchor)
        upstream = relative_change(task.means, anchor.means) if task.means and anchor.means else None
        shared = sorted(set(task.required) & set(anchor.required), key=task.required.index)
        paired = {m: paired_change(task.rows, anchor.rows, m) for m in shared}
        have_pairs = bool({r["pair_id"] for r in task.rows} & {r["pair_id"] for r in anchor.rows})
        reason = None
        if not have_pairs:
            reason = "no shared source pair: the task and its anchor hold different pairs (see upstream's unpaired change)"
        elif not any(paired.values()):
            reason = "no shared pair has scores in both tasks yet"
        task.changes = {
            "anchor": anchor.name,
            "upstream_relative_change_percent": upstream,
            "upstream_label": UPSTREAM_LABEL,
            "upstream_reason": None if upstream is not None else "both tasks must be complete (upstream's rule)",
            "paired": {m: v for m, v in paired.items() if v is not None},
            "paired_label": PAIRED_LABEL,
            "paired_reason": reason,
        }
