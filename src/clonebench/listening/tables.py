"""The results of a listening test as Markdown, LaTeX (booktabs) or CSV."""

from __future__ import annotations

import csv
import io

from clonebench.report.format import latex_escape

NAMES = {"mos": "MOS", "smos": "SMOS", "cmos": "CMOS", "mushra": "MUSHRA", "arena": "Arena"}


def _p(value: float | None) -> str:
    return "–" if value is None else ("< 0.001" if value < 0.001 else f"{value:.3f}")


def _ci(ci: list[float], digits: int) -> str:
    return f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def _digits(summary: dict) -> int:
    return 1 if summary["kind"] == "mushra" else 2


def notes(summary: dict) -> list[str]:
    raters = summary["raters"]
    excluded = "; ".join(f"{e['rater']}: {e['reason']}" for e in raters["excluded"])
    lines = [f"Raters: {raters['given']} given, {raters['kept']} kept"
             + (f" (excluded: {excluded})" if excluded else "") + "."]
    agreement = summary.get("agreement")
    if agreement:
        value = agreement["krippendorff_alpha"]
        lines.append(f"Krippendorff's alpha ({agreement['level']}) = "
                     f"{'n/a' if value is None else f'{value:.3f}'} over {agreement['units']} units, "
                     f"{agreement['raters']} raters.")
    lines.append(f"95 % CI: {summary['ci_method']}. p: {summary['test_method']}.")
    return lines


def _rows(summary: dict) -> tuple[list[str], list[list[str]], list[str], list[list[str]]]:
    d, name = _digits(summary), NAMES[summary["kind"]]
    if summary["kind"] == "arena":
        return _arena_rows(summary.get("arena") or {"systems": [], "differences": []})
    if summary["kind"] == "cmos":
        head = ["comparison", "CMOS", "95 % CI", "Wilcoxon p", "Holm p", "ratings", "items"]
        body = [[r["label"], f"{r['mean']:+.{d}f}", _ci(r["ci"], d), _p(r["p_wilcoxon"]), _p(r["p_holm"]),
                 str(r["n_ratings"]), str(r["n_items"])] for r in summary["cmos"]]
        return head, body, [], []
    head = ["system", f"{name} (human)", "95 % CI", "ratings", "items"]
    body = [[r["label"], f"{r['mean']:.{d}f}", _ci(r["ci"], d), str(r["n_ratings"]), str(r["n_items"])]
            for r in summary["scores"]]
    dhead = ["difference", "Δ", "95 % CI", "Wilcoxon p", "Holm p"]
    dbody = [[r["label"], f"{r['delta']:+.{d}f}", _ci(r["ci"], d), _p(r["p_wilcoxon"]), _p(r["p_holm"])]
             for r in summary["differences"]]
    return head, body, dhead, dbody


def _arena_rows(arena: dict) -> tuple[list[str], list[list[str]], list[str], list[list[str]]]:
    """Arena: rank, Bradley-Terry strength (and on the Elo scale), rank CI, Elo, win rate; then the differences."""
    head = ["rank", "system", "BT strength", "95 % CI", "rank 95 % CI", "BT (Elo scale)", "Elo", "win rate",
            "comparisons"]
    body = [[str(r["rank"]), r["label"], f"{r['strength']:+.2f}", _ci(r["ci"], 2),
             f"{r['rank_ci'][0]}–{r['rank_ci'][1]}", f"{r['bt_elo']:.0f}", f"{r['elo']:.0f}",
             "–" if r["win_rate"] is None else f"{r['win_rate']:.3f}", str(r["comparisons"])]
            for r in arena["systems"]]
    dhead = ["difference", "Δ strength", "95 % CI"]
    dbody = [[r["label"], f"{r['delta']:+.2f}", _ci(r["ci"], 2)] for r in arena["differences"]]
    return head, body, dhead, dbody


def win_rate_lines(arena: dict) -> list[str]:
    """The win-rate matrix (row system against column system; ties half a win) as a Markdown table."""
    matrix, labels = arena["matrix"], arena["matrix"]["labels"]
    body = [[labels[i]] + ["–" if v is None else f"{v:.2f}" for v in row] for i, row in enumerate(matrix["rate"])]
    return ["Win rate of the row system against the column system (ties count half):", ""] + \
        _md_table(["row vs column"] + labels, body)


def _md_table(head: list[str], body: list[list[str]]) -> list[str]:
    cell = lambda text: text.replace("|", "\\|")  # noqa: E731
    return ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"] + \
        ["| " + " | ".join(cell(c) for c in row) + " |" for row in body]


def markdown(summary: dict) -> str:
    lines = [f"{NAMES[summary['kind']]} listening test {summary['test_id']}: {summary['title']}", ""]
    head, body, dhead, dbody = _rows(summary)
    lines += _md_table(head, body) if body else ["No rater was kept: no scores."]
    if dbody:
        lines += [""] + _md_table(dhead, dbody)
    if summary["kind"] == "arena" and summary.get("arena"):
        lines += [""] + win_rate_lines(summary["arena"])
    return "\n".join(lines + [""] + notes(summary)) + "\n"


def _latex_table(head: list[str], body: list[list[str]]) -> list[str]:
    fix = lambda t: latex_escape(t).replace("Δ", r"$\Delta$").replace("−", "--").replace("<", r"$<$")  # noqa: E731
    return [r"\begin{tabular}{l" + "c" * (len(head) - 1) + "}", r"\toprule", " & ".join(fix(h) for h in head)
            + r" \\", r"\midrule"] + [" & ".join(fix(c) for c in row) + r" \\" for row in body] + \
        [r"\bottomrule", r"\end{tabular}"]


def latex(summary: dict) -> str:
    head, body, dhead, dbody = _rows(summary)
    lines = _latex_table(head, body) + (_latex_table(dhead, dbody) if dbody else [])
    # notes hold rater ids and exclusion reasons: escaped, so a newline cannot leave the comment line
    return "\n".join(lines + ["% " + latex_escape(n) for n in notes(summary)]) + "\n"


def csv_text(summary: dict) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["test_id", "kind", "statistic", "name", "mean", "ci_low", "ci_high", "p_wilcoxon", "p_holm",
                     "n_ratings", "n_items", "n_raters"])
    base = [summary["test_id"], summary["kind"]]
    for r in summary["scores"] + summary["cmos"]:
        writer.writerow(base + ["cmos" if summary["kind"] == "cmos" else "score", r["label"], r["mean"], *r["ci"],
                                r.get("p_wilcoxon", ""), r.get("p_holm", ""), r["n_ratings"], r["n_items"],
                                r["n_raters"]])
    for r in (summary.get("arena") or {}).get("systems", []):
        writer.writerow(base + ["bt_strength", r["label"], r["strength"], *r["ci"], "", "", r["comparisons"], "",
                                summary["raters"]["kept"]])
        writer.writerow(base + ["rank", r["label"], r["rank"], *r["rank_ci"], "", "", "", "",
                                summary["raters"]["kept"]])
        writer.writerow(base + ["elo", r["label"], r["elo"], "", "", "", "", "", "", summary["raters"]["kept"]])
    for r in (summary.get("arena") or {}).get("differences", []):
        writer.writerow(base + ["bt_difference", r["label"], r["delta"], *r["ci"], "", "", "", "",
                                summary["raters"]["kept"]])
    for r in summary["differences"]:
        writer.writerow(base + ["difference", r["label"], r["delta"], *r["ci"], r["p_wilcoxon"], r["p_holm"], "",
                                r["n_items"], summary["raters"]["kept"]])
    agreement = summary.get("agreement") or {}
    writer.writerow(base + [f"krippendorff_alpha_{agreement.get('level', '')}".rstrip("_"), "",
                            "" if agreement.get("krippendorff_alpha") is None else agreement["krippendorff_alpha"],
                            "", "", "", "", "", agreement.get("units", ""), summary["raters"]["kept"]])
    return buffer.getvalue()
