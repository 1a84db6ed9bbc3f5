"""The HTML report's two-or-more-run sections: the paired deltas of two runs and the N-system comparison, both
from one ``compare_systems`` result, so a quantity (ΔSIM of B − A, say) has one interval on the page: the
studentized speaker-cluster bootstrap that docs/statistics.md names for paired differences, with the number of
speakers said beside it when there are too few to support a claim."""

from __future__ import annotations

from html import escape

import numpy as np

from clonebench.core.cells import as_number
from clonebench.core.errors import ClonebenchError
from clonebench.report.compare_render import ci_text, p_text, render
from clonebench.report.format import metric_label, metric_number
from clonebench.report.html_data import RunView
from clonebench.report.html_rows import LETTERS

PAIRED_METRICS = ("sim", "sva", "wer", "mcd", "dnsmos", "mos", "emotion_match", "fail")


def comparison_of(views: list[RunView]) -> dict | str:
    """The comparison of the runs (``clonebench compare``'s), or why they are not compared."""
    from clonebench.report.multi_compare import compare_systems
    from clonebench.report.systems import system_of

    labels = [v.label if [w.label for w in views].count(v.label) == 1 else f"{LETTERS[k]}: {v.label}"
              for k, v in enumerate(views)]
    try:
        return compare_systems([system_of(label, [v.table.run_dir]) for label, v in zip(labels, views)],
                               allow_partial=True)
    except ClonebenchError as exc:
        return str(exc)


def comparison_section(views: list[RunView], result: dict | str | None) -> str:
    if len(views) < 2 or result is None:
        return ""
    if isinstance(result, str):
        return f'<section id="comparison"><h2>Comparison</h2><p>Not compared: {escape(result)}</p></section>'
    return render(result, "section")  # the one escaped rendering compare prints and writes


def paired_section(views: list[RunView], result: dict | str | None) -> str:
    """Per metric: the pairs both runs scored, each run's mean over them, Δ = B − A with the comparison's
    interval and p-value, and the mean |Δ|."""
    if len(views) != 2:
        return ""
    a, b = views
    common = [p for p in a.samples if p in b.samples]
    compared = result.get("metrics", {}) if isinstance(result, dict) else {}
    rows = []
    for key in PAIRED_METRICS:
        va = [as_number(a.samples[p].get(key)) for p in common]
        vb = [as_number(b.samples[p].get(key)) for p in common]
        keep = [i for i in range(len(common)) if va[i] is not None and vb[i] is not None]
        if not keep:
            continue
        xa, xb = np.asarray([va[i] for i in keep]), np.asarray([vb[i] for i in keep])
        c = ((compared.get(key) or {}).get("comparisons") or [None])[0]
        delta = c["delta"] if c and c.get("delta") is not None else float(np.mean(xb - xa))
        interval = ci_text(c["ci"], True, key, c.get("speakers")) if c and c.get("delta") is not None \
            else "– (not compared)"
        means = [metric_number(key, float(v), 4) for v in (xa.mean(), xb.mean(), np.abs(xb - xa).mean())]
        rows.append(f"<tr><td>{metric_label(key)}</td><td>{len(keep)}/{len(common)}</td><td>{means[0]}</td>"
                    f"<td>{means[1]}</td><td>{metric_number(key, delta, 4, sign=True)}</td><td>{interval}</td>"
                    f"<td>{p_text(c['p_value']) if c else '–'}</td><td>{means[2]}</td></tr>")
    method = ("95 % CI and p: the studentized speaker-cluster bootstrap of the comparison below (the one interval "
              "of each Δ on this page)" if compared else "no interval: the runs are not compared (see Comparison)")
    legend = f"A = {escape(a.label)}, B = {escape(b.label)}; Δ = B − A over the pairs both runs scored; {method}."
    return ("<h2 id=\"paired\">Paired deltas (B − A)</h2><p>" + legend + "</p><div class=\"scroll\"><table class=\"paired\"><thead><tr>"
            "<th>metric</th><th>pairs</th><th>mean A</th><th>mean B</th><th>Δ mean</th><th>Δ 95 % CI</th>"
            "<th>p</th><th>mean |Δ|</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>")
