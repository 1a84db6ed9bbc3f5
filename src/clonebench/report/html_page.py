"""The HTML report: one self-contained folder (index.html with inline CSS and JS, the plots as PNG files,
audio by relative path or copied in with ``copy_audio``). No network: no CDN, no remote font, no fetch.

Every text from a manifest, a CSV or a server is escaped; the JSON embedded in a <script> element has
``<``, ``>`` and ``&`` written as ``\\u003c``, ``\\u003e``, ``\\u0026`` so ``</script>`` or ``<!--`` cannot
end or comment out the element."""

from __future__ import annotations

import json
from html import escape
from importlib import resources
from pathlib import Path

from clonebench.core.atomic import atomic_write_text
from clonebench.core.cells import as_number
from clonebench.report.format import metric_label, metric_number
from clonebench.report.html_data import RunView, coverage, provenance
from clonebench.report.html_rows import (
    LETTERS,
    AudioLinker,
    failure_summary_html,
    failure_titles,
    flag_title,
    row_flags,
    sample_rows,
)
from clonebench.report.paper import (
    COLUMNS,
    PUBLISHED_LABEL,
    _cell,
    best,
    footnotes,
    is_best,
    shown_columns,
    split_rows,
)
from clonebench.report.plots import write_plots
from clonebench.stats.paired import paired_summary

PAGE = "index.html"


def script_json(payload) -> str:
    """JSON that is safe inside <script>: no '<', '>' or '&' survives literally."""
    return json.dumps(payload, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e") \
        .replace("&", "\\u0026").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def static_text(name: str) -> str:
    return resources.files("clonebench.report").joinpath("static", name).read_text(encoding="utf-8")


def paper_table(rows: list[dict], columns: list = COLUMNS) -> str:
    top, shown = best(rows, columns), shown_columns(rows, columns)
    head = "<tr><th>model</th>" + "".join(f"<th>{escape(h)}</th>" for _, h, _ in shown) + "</tr>"
    measured, published = split_rows(rows)

    def body(block: list[dict]) -> str:
        out = []
        for row in block:
            cells = []
            for key, _, _ in shown:
                cell = row["cells"].get(key)
                text = escape(_cell(cell))
                bold = is_best(cell, top, key, row)
                cells.append(f'<td class="{"best" if bold else ""}">{text}</td>')
            out.append(f'<tr class="{escape(row["source"])}"><td>{escape(row["name"])}</td>{"".join(cells)}</tr>')
        return "".join(out)

    tbody = f"<tbody>{body(measured)}</tbody>" if measured else ""
    if published:  # context measured on other data: a block of its own under a label, never bold
        tbody += (f'<tbody class="published"><tr class="published-label"><th colspan="{len(shown) + 1}">'
                  f"{escape(PUBLISHED_LABEL)}</th></tr>{body(published)}</tbody>")
    notes = "".join(f"<li>{escape(n)}</li>" for n in footnotes(rows))
    return f'<table class="paper"><thead>{head}</thead>{tbody}</table><ul class="notes">{notes}</ul>'


def _definition_list(record: dict) -> str:
    items = []
    for key, value in record.items():
        if value in (None, {}, []):
            continue
        shown = value if isinstance(value, str) else json.dumps(value, indent=1, ensure_ascii=False, default=str)
        items.append(f"<dt>{escape(str(key))}</dt><dd><pre>{escape(str(shown))}</pre></dd>")
    return f"<dl>{''.join(items)}</dl>"


def _paired(views: list[RunView]) -> str:
    if len(views) != 2:
        return ""
    a, b = views
    common = [p for p in a.samples if p in b.samples]
    rows = []
    for key in ("sim", "sva", "wer", "mcd", "dnsmos", "mos", "emotion_match", "fail"):
        va = [as_number(a.samples[p].get(key)) for p in common]
        vb = [as_number(b.samples[p].get(key)) for p in common]
        keep = [i for i in range(len(common)) if va[i] is not None and vb[i] is not None]
        if not keep:
            continue
        speakers = [str(a.samples[common[i]]["speaker_id"]) for i in keep]
        s = paired_summary([vb[i] for i in keep], [va[i] for i in keep], speakers)
        ci = s["delta_ci95"]
        # a rate (fail) in percent, its deltas in percentage points; any other metric with 4 decimals
        means = [metric_number(key, s[k], 4) for k in ("historical_mean", "current_mean", "mean_abs_delta")]
        deltas = [metric_number(key, v, 4, sign=True) for v in (s["paired_mean_delta"], *ci)]
        rows.append(f"<tr><td>{metric_label(key)}</td><td>{s['n_pairs']}/{len(common)}</td><td>{means[0]}</td>"
                    f"<td>{means[1]}</td><td>{deltas[0]}</td><td>[{deltas[1]}, {deltas[2]}]</td>"
                    f"<td>{means[2]}</td></tr>")
    legend = f"A = {escape(a.label)}, B = {escape(b.label)}; Δ = B − A over the pairs both runs scored; " \
             "95 % CI by speaker-cluster bootstrap."
    return ("<h2 id=\"paired\">Paired deltas (B − A)</h2><p>" + legend + "</p><table class=\"paired\"><thead><tr>"
            "<th>metric</th><th>pairs</th><th>mean A</th><th>mean B</th><th>Δ mean</th><th>Δ 95 % CI</th>"
            "<th>mean |Δ|</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _failure_controls(views: list[RunView]) -> str:
    """The failure filter (all / failed only / one flag, with its count of rows) and a worst-first button; "" when no
    run has failure verdicts."""
    if not failure_titles(views):
        return ""
    counts: dict[str, int] = {}
    failed = 0
    for pair_id in dict.fromkeys(p for v in views for p in v.samples):
        rows = [v.samples.get(pair_id) for v in views]
        flags = {f for r in rows for f in row_flags(r) or []}
        failed += any(as_number((r or {}).get("fail")) == 1.0 for r in rows)
        for flag in flags:
            counts[flag] = counts.get(flag, 0) + 1
    options = "".join(f'<option value="{escape(f)}" title="{escape(flag_title(f))}">{escape(f)} ({n})</option>'
                      for f, n in counts.items())
    return (f'<label>failures <select id="failure-filter"><option value="">all utterances</option>'
            f'<option value="*">failed only ({failed})</option>{options}</select></label>'
            '<button id="worst-fail" type="button">failed first</button>')


def _comparison(views: list[RunView]) -> str:
    """The N-system comparison (``clonebench compare``) of the runs, or why they are not compared."""
    if len(views) < 2:
        return ""
    from clonebench.core.errors import ClonebenchError
    from clonebench.report.compare_render import render
    from clonebench.report.multi_compare import compare_systems
    from clonebench.report.systems import system_of

    labels = [v.label if [w.label for w in views].count(v.label) == 1 else f"{LETTERS[k]}: {v.label}"
              for k, v in enumerate(views)]
    try:
        result = compare_systems([system_of(label, [v.table.run_dir]) for label, v in zip(labels, views)],
                                 allow_partial=True)
        return render(result, "section")  # the one escaped rendering compare prints and writes
    except ClonebenchError as exc:
        return f'<section id="comparison"><h2>Comparison</h2><p>Not compared: {escape(str(exc))}</p></section>'


def write_html_report(views: list[RunView], rows: list[dict], out_dir: Path, copy_audio: bool = False,
                      columns: list = COLUMNS, sections: list[str] = ()) -> Path:
    """Write ``out_dir/index.html`` (+ plots, + audio when copied); return the page's path. ``sections``: HTML
    placed after the results table, already rendered by their room (a suite run's task sections: suite/html.py)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = write_plots([v.table for v in views], out_dir)
    linker = AudioLinker(out_dir, copy_audio)
    table_html, cols = sample_rows(views, linker)
    speakers = sorted({str(s.get("speaker_id")) for v in views for s in v.samples.values()})
    runs = [{"letter": LETTERS[k], "label": v.label} for k, v in enumerate(views)]
    failures = failure_titles(views)
    config = {"runs": runs, "columns": [c["title"] for c in cols], "failures": failures,
              "sim": next((c["title"] for c in cols if c["key"] == "sim" and not c.get("delta")), None),
              "wer": next((c["title"] for c in cols if c["key"] == "wer" and not c.get("delta")), None)}
    legend = ", ".join(f"{r['letter']} = {escape(r['label'])}" for r in runs)
    options = "".join(f'<option value="{escape(s)}">{escape(s)}</option>' for s in speakers)
    figures = "".join(f'<figure><img src="{escape(p.name)}" alt="{escape(p.stem)}"></figure>' for p in plots)
    prov = "".join(f"<details open><summary>{escape(v.label)}</summary>{_definition_list(provenance(v))}</details>"
                   for v in views)
    cov = "".join(f"<details><summary>{escape(v.label)}</summary>{_definition_list(coverage(v))}</details>"
                  for v in views)
    title = "clonebench report: " + ", ".join(v.label for v in views)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src 'self'; media-src 'self' file:; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>{escape(title)}</title><style>{static_text("report.css")}</style></head>
<body><h1>{escape(title)}</h1>
<nav><a href="#table">table</a> · <a href="#plots">plots</a> · <a href="#samples">samples</a>{' · <a href="#paired">paired deltas</a>' if len(views) == 2 else ''}{' · <a href="#comparison">comparison</a>' if len(views) >= 2 else ''} · <a href="#provenance">provenance</a> · <a href="#coverage">coverage</a></nav>
<h2 id="table">Results</h2>{paper_table(rows, columns)}
{"".join(sections)}
<h2 id="plots">Plots</h2><div class="plots">{figures or "<p>no SIM or WER values to plot</p>"}</div>
{_paired(views)}
{_comparison(views)}
<h2 id="samples">Samples</h2><p class="legend">{legend}. Click a column header to sort{"; rows with failure flags come first (failed, then by number of flags); hover a flag for its rule" if failures else ""}; in the transcripts,
<del>struck</del> words are reference words the hypothesis missed or replaced, <ins>marked</ins> words are what it said instead
(after the run's WER normalisation).</p>{"".join(f'<p class="note">{escape(n)}</p>' for v in views for n in v.notes)}{failure_summary_html(views)}
<div class="controls"><label>speaker <select id="speaker"><option value="">all</option>{options}</select></label>
<button id="worst-sim" type="button">lowest SIM first</button><button id="worst-wer" type="button">highest WER first</button>
{_failure_controls(views)}
<span id="shown"></span></div>
<table id="samples-table" class="samples">{table_html}</table>
<h2 id="provenance">Provenance</h2>{prov}
<h2 id="coverage">Coverage</h2>{cov}
<script type="application/json" id="report-config">{script_json(config)}</script>
<script>{static_text("report.js")}</script>
</body></html>
"""
    atomic_write_text(out_dir / PAGE, page)
    return out_dir / PAGE
