"""The results of an arena (pairwise) listening test: the kept raters' answers to its rating trials turned into
comparisons and ranked by :mod:`clonebench.stats.arena` (Bradley-Terry by choix, two-way bootstrap CIs over raters
x items, win rates, Elo). Checks and repeated trials are screening only, never counted."""

from __future__ import annotations

from clonebench.stats import arena as stats


def summarise(key: dict, rows: list[dict], raters: list[str], labels: dict, draws: int) -> dict:
    """``rows``: :func:`clonebench.listening.results.answers` of every file (value: +1 the second system of the
    trial won, 0 about the same, -1 the first won)."""
    items = [i["pair_id"] for i in key["sampling"]["items"]]
    used = [r for r in rows if r["type"] == "rating" and r["rater"] in raters and r["condition"]]
    present = {code for r in used for code in r["condition"].split(" vs ")}
    names = [s["code"] for s in key["systems"] if s["code"] in present]
    comparisons = []
    for row in used:
        second, first = row["condition"].split(" vs ")
        comparisons.append((raters.index(row["rater"]), items.index(row["item"]), names.index(second),
                            names.index(first), (row["value"] + 1) / 2))  # the second's score: 1, 0.5 or 0
    scores = stats.score_matrices(comparisons, len(raters), len(items), len(names))
    out = stats.ranking(scores, comparisons, names, draws)
    for row in out["systems"]:
        row["label"] = labels.get(row["condition"], row["condition"])
    for row in out["differences"]:
        row["label"] = f"{labels.get(row['b'], row['b'])} − {labels.get(row['a'], row['a'])}"
    out["matrix"]["labels"] = [labels.get(code, code) for code in names]
    return out
