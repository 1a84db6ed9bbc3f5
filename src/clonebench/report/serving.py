"""The serving section of a report: a serving run's ``serving.json`` (``+serving=sweep``) as a table per level and
the capacity lines, in Markdown or HTML (the plots: ``serving_plots.py``)."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from clonebench.core.errors import ClonebenchError

RESULTS, MANIFEST, QUALITY = "serving.json", "run_manifest.json", "serving_quality.json"
HEAD = ["level", "ok/sent", "TTFA p50 ms", "TTFA p95 ms", "TTFA p99 ms", "TTFB p50 ms", "RTF p50",
        "throughput (audio s/s)"]
PLAYER_HEAD = ["starved", "stalls/stream", "stalled s/stream"]


def is_serving_run(run_dir: Path) -> bool:
    manifest = Path(run_dir) / MANIFEST
    return manifest.is_file() and json.loads(manifest.read_text(encoding="utf-8")).get("measure") == "stream"


def load_serving(run_dir: Path) -> dict:
    path = Path(run_dir) / RESULTS
    if not path.is_file():
        raise ClonebenchError(f"{run_dir} is a serving run without {RESULTS}: it failed before its first level "
                              f"(see {MANIFEST}); run it again")
    data = json.loads(path.read_text(encoding="utf-8"))
    data["_run_dir"] = str(run_dir)
    scored = Path(run_dir) / QUALITY
    if scored.is_file():  # metrics.score_under_load(RUN)
        data["quality"] = json.loads(scored.read_text(encoding="utf-8"))
    return data


def _ms(cell: dict | None) -> str:
    if not cell or cell.get("value") is None:
        return "-"
    ci = cell.get("ci")
    return f"{cell['value'] * 1000:.0f}" + (f" [{ci[0] * 1000:.0f}, {ci[1] * 1000:.0f}]" if ci else "")


def _num(value, fmt: str = ".2f") -> str:
    return "-" if value is None else format(value, fmt)


def level_label(level: dict) -> str:
    return f"{level['level']:g} in flight" if level["mode"] == "closed" else f"{level['level']:g}/s arrivals"


def cold_line(data: dict) -> str | None:
    cold = data.get("cold") or {}
    if not cold:
        return None
    return (f"Cold request (reported apart): TTFA {_num(cold.get('ttfa_s'), '.3f')} s, TTFB "
            f"{_num(cold.get('ttfb_s'), '.3f')} s, total {_num(cold.get('total_s'), '.3f')} s"
            + ("" if cold.get("ok") else f" (failed: {cold.get('error_class')})"))


def table(data: dict) -> tuple[list[str], list[list[str]]]:
    """Per level: TTFA and TTFB percentiles in ms (with their bootstrap intervals), RTF, throughput, and for
    streamed answers the player's starvation."""
    streamed = data.get("streamed", True)
    compared = any("outputs_vs_alone" in level["summary"] for level in data.get("levels", []))
    rows = []
    for level in data.get("levels", []):
        s = level["summary"]
        row = [level_label(level), f"{s['ok']}/{s['requests']}", _ms(s["ttfa_s"]["p50"]), _ms(s["ttfa_s"]["p95"]),
               _ms(s["ttfa_s"]["p99"]), _ms(s["ttfb_s"]["p50"]), _num(s["rtf_p50"]), _num(s["throughput"])]
        if streamed:
            rate = s["starvation_rate"]
            row += ["-" if rate is None else f"{rate:.0%}", _num(s["stalls_mean"]), _num(s["stalled_s_mean"], ".3f")]
        if compared:
            same = s.get("outputs_vs_alone")
            row.append(f"{same['identical']}/{same['compared']}" if same and same["compared"] else "-")
        rows.append(row)
    return HEAD + (PLAYER_HEAD if streamed else []) + (["same bytes as alone"] if compared else []), rows


def capacity_lines(data: dict) -> list[str]:
    lines = []
    for level in (data.get("quality") or {}).get("levels", []):
        if level["scored"]:
            lines.append(f"Changed under load at {level['mode']} loop {level['level']:g}: {level['scored']} answers, "
                         f"SIM to the answer alone mean {_num(level['sim_to_alone_mean'], '.3f')} (min "
                         f"{_num(level['sim_to_alone_min'], '.3f')}), WER {_num(level['wer_under_load'], '.3f')} "
                         f"under load vs {_num(level['wer_alone'], '.3f')} alone")
    for cap in data.get("capacity", []):
        unit = "in flight" if cap["mode"] == "closed" else "arrivals/s"
        found = "none" if cap["capacity"] is None else f"{cap['capacity']:g} {unit}"
        lines.append(f"Capacity ({cap['mode']} loop; p95 TTFA <= {cap['ttfa_budget_s']:g} s, starved <= "
                     f"{cap['starvation_bound']:.0%}, no error): {found}; limited by {cap['limited_by']}")
    if not data.get("streamed", True):
        lines.append("One-shot answers: TTFA is the total time and there is no simulated player.")
    return lines


def title(data: dict) -> str:
    return f"Serving: {data.get('protocol', '')}" + (f" ({data['_run_dir']})" if data.get("_run_dir") else "")


def serving_markdown(data: dict) -> str:
    head, rows = table(data)
    lines = [f"### {title(data)}", ""]
    if cold_line(data):
        lines += [cold_line(data), ""]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines + [""] + capacity_lines(data))


def serving_html(data: dict, plots: list[Path]) -> str:
    """A section of the HTML report (every value escaped); ``plots``: PNG files beside the page."""
    head, rows = table(data)
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    notes = "".join(f"<p>{escape(line)}</p>" for line in [cold_line(data) or "", *capacity_lines(data)] if line)
    figures = "".join(f'<figure><img src="{escape(p.name)}" alt="{escape(p.stem)}"></figure>' for p in plots)
    return (f'<section class="serving"><h2>{escape(title(data))}</h2><table><thead><tr>{header}</tr></thead>'
            f'<tbody>{body}</tbody></table>{notes}<div class="plots">{figures}</div>'
            '<p>Definitions: docs/serving.md; each run manifest holds them as serving_definitions.</p></section>')


def write_serving_page(sections: list[str], out_dir: Path, css: str) -> Path:
    """A page of serving runs only (no quality run given): their sections, plots beside it."""
    from clonebench.core.atomic import atomic_write_text

    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src 'self'; style-src 'unsafe-inline'">
<title>clonebench serving report</title><style>{css}</style></head>
<body><h1>clonebench serving report</h1>
{"".join(sections)}
</body></html>
"""
    atomic_write_text(Path(out_dir) / "index.html", page)
    return Path(out_dir) / "index.html"
