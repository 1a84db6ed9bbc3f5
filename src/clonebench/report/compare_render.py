"""The comparison of N systems (``report.multi_compare``) as Markdown, LaTeX (booktabs), CSV, JSON and an HTML
section; ``write_comparison`` writes the chosen formats into a folder."""

from __future__ import annotations

import csv
import io
import json
from html import escape
from pathlib import Path

from clonebench.core.atomic import atomic_write_text
from clonebench.core.redact import shown
from clonebench.report.format import is_percent, latex_escape, metric_number
from clonebench.report.multi_compare import FEW_SPEAKERS

LABELS = {"sim": "SIM", "sva": "SVA", "wer": "WER", "mcd": "MCD", "dnsmos": "DNSMOS", "stoi": "STOI", "mos": "MOS",
          "emotion_match": "Emo", "fail": "fail%", "seed_wer_en": "Seed WER-en%", "seed_wer_zh": "Seed WER-zh%",
          "seed_sim": "Seed SIM-o"}
PERCENT_NOTE = ("fail%: the share of pairs with a failure flag, in percent; its Δ and CI in percentage points "
                "(the CSV and JSON keep rates as fractions)")
CSV_FIELDS = ["metric", "kind", "system", "a", "b", "runs", "n", "speakers", "mean", "ci_low", "ci_high", "delta",
              "p_value", "p_holm", "dz", "b_wins", "a_wins", "ties", "verdict", "seed_var", "pair_var", "seed_share",
              "run_mean_sd", "reseed_range95", "exceeds_reseeding"]
FILES = {"md": "comparison.md", "latex": "comparison.tex", "csv": "comparison.csv", "json": "comparison.json",
         "html": "comparison.html"}


def _num(value, digits: int = 4, sign: bool = False, metric: str = "") -> str:
    """A number with ``digits`` decimals; a rate metric (``fail``) x100 with one decimal (Δ in percentage points)."""
    if value is None:
        return "–"
    return metric_number(metric, value, digits, sign)


def p_text(value) -> str:
    return "–" if value is None else ("<0.001" if value < 0.001 else f"{value:.3f}")


def ci_text(ci, sign: bool = False, metric: str = "", speakers: int | None = None) -> str:
    """An interval; with fewer than FEW_SPEAKERS speakers, said beside it (the bootstrap cannot support a claim)."""
    text = "unbounded" if not ci else \
        f"[{_num(ci[0], sign=sign, metric=metric)}, {_num(ci[1], sign=sign, metric=metric)}]"
    if speakers is not None and speakers < FEW_SPEAKERS:
        text += f" (only {speakers} speaker{'s' if speakers != 1 else ''}: too few to support a claim)"
    return text




def _title(metric: str, entry: dict) -> str:
    return f"{LABELS.get(metric, metric)} {'↑' if entry['higher_is_better'] else '↓'}"


def _wins(c: dict) -> str:
    w = c.get("wins")
    return "–" if not w else f"{w['b_wins']}/{w['a_wins']}/{w['ties']}"


def _reseed(c: dict) -> str:
    r = c.get("reseeding")
    return "–" if not r else ("exceeds" if r["exceeds"] else "within") + f" (±{r['reseed_range95']:.4f})"


def _intro(result: dict) -> list[str]:
    systems = ", ".join(f"{s['system']} ({len(s['runs'])} run{'s' if len(s['runs']) > 1 else ''})"
                        for s in result["systems"])
    lines = [f"Systems: {systems}; {result['n_pairs']} pairs."]
    if result["ranked"]:
        mode = f"B − A against the baseline {result['baseline']}" if result["baseline"] else "B − A for every pair of systems"
        lines.append(f"Paired differences {mode}; {result['method']}; wins = pairs where B / A is better / ties; "
                     f"verdicts at α = {result['alpha']} after adjustment. A system with several runs counts the mean "
                     "of its runs per pair.")
    else:
        lines.append("**Ranking disabled** (--allow-incompatible): no comparison is valid because "
                     + "; ".join(result["problems"]))
    if any(is_percent(m) for m in result["metrics"]):
        lines.append(PERCENT_NOTE)
    lines += [f"Warning: {w}" for w in result.get("warnings", [])]
    return lines


def markdown(result: dict) -> str:
    lines = ["# Comparison", "", *_intro(result), ""]
    for metric, entry in result["metrics"].items():
        lines += [f"## {_title(metric, entry)}", "", "| system | runs | n | mean | 95 % CI |", "|---|---:|---:|---:|---|"]
        for s in entry["systems"]:
            best = entry["best"] is not None and s["mean"] == entry["best"]
            mean = f"**{_num(s['mean'], metric=metric)}**" if best else _num(s["mean"], metric=metric)
            lines.append(f"| {s['system']} | {s['runs']} | {s['n']} | {mean} | {ci_text(s['ci'], metric=metric)} |")
        if entry["comparisons"]:
            lines += ["", "| B − A | n | Δ | 95 % CI | p | p (Holm) | dz | wins B/A/ties | vs re-seeding | verdict |",
                      "|---|---:|---:|---|---:|---:|---:|---|---|---|"]
            for c in entry["comparisons"]:
                lines.append(f"| {c['b']} − {c['a']} | {c['n']} | {_num(c['delta'], sign=True, metric=metric)} | "
                             f"{ci_text(c['ci'], True, metric, c.get('speakers'))} "
                             f"| {p_text(c['p_value'])} | {p_text(c['p_holm'])} | {_num(c['dz'], 2)} | {_wins(c)} | "
                             f"{_reseed(c)} | {c['verdict']} |")
        seeds = [s for s in entry["systems"] if s["seed"]]
        if seeds:
            lines += ["", "| seed variance | runs | between-seed var | between-pair var | seed share | SD of run means |",
                      "|---|---:|---:|---:|---:|---:|"]
            for s in seeds:
                c = s["seed"]
                lines.append(f"| {s['system']} | {c['runs']} | {c['seed_var']:.4g} | {c['pair_var']:.4g} | "
                             f"{_num(c['seed_share'], 3)} | {c['run_mean_sd']:.4g} |")
        lines.append("")
    return "\n".join(lines)


def latex(result: dict) -> str:
    out = []
    for metric, entry in result["metrics"].items():
        title = latex_escape(_title(metric, entry)).replace("↑", r"$\uparrow$").replace("↓", r"$\downarrow$")
        out += [rf"% {title}", r"\begin{tabular}{lrrll}", r"\toprule", rf"\multicolumn{{5}}{{l}}{{{title}}} \\",
                r"System & runs & $n$ & mean & 95\,\% CI \\", r"\midrule"]
        for s in entry["systems"]:
            mean = _num(s["mean"], metric=metric)
            if entry["best"] is not None and s["mean"] == entry["best"]:
                mean = rf"\textbf{{{mean}}}"
            out.append(rf"{latex_escape(s['system'])} & {s['runs']} & {s['n']} & {mean} & "
                       rf"{ci_text(s['ci'], metric=metric)} \\")
        if entry["comparisons"]:
            out += [r"\midrule", r"B $-$ A & $n$ & $\Delta$ [95\,\% CI] & $p$ / $p_{\mathrm{Holm}}$ & $d_z$, wins B/A/ties \\",
                    r"\midrule"]
            for c in entry["comparisons"]:
                name = latex_escape(f"{c['b']} - {c['a']}")
                out.append(rf"{name} & {c['n']} & {_num(c['delta'], sign=True, metric=metric)} "
                           rf"{ci_text(c['ci'], True, metric, c.get('speakers'))} & "
                           rf"{p_text(c['p_value'])} / {p_text(c['p_holm'])} & {_num(c['dz'], 2)}, {_wins(c)} \\")
        out += [r"\bottomrule", r"\end{tabular}", ""]
    notes = _intro(result)
    return "\n".join(out + ["% " + latex_escape(n) for n in notes]) + "\n"


def csv_text(result: dict) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for metric, entry in result["metrics"].items():
        for s in entry["systems"]:
            seed = s["seed"] or {}
            writer.writerow({"metric": metric, "kind": "system", "system": s["system"], "runs": s["runs"], "n": s["n"],
                             "speakers": s.get("speakers"), "mean": s["mean"], "ci_low": (s["ci"] or [None])[0],
                             "ci_high": (s["ci"] or [None, None])[1], "seed_var": seed.get("seed_var"),
                             "pair_var": seed.get("pair_var"), "seed_share": seed.get("seed_share"),
                             "run_mean_sd": seed.get("run_mean_sd")})
        for c in entry["comparisons"]:
            w, r = c.get("wins") or {}, c.get("reseeding") or {}
            writer.writerow({"metric": metric, "kind": "comparison", "a": c["a"], "b": c["b"], "n": c["n"],
                             "speakers": c.get("speakers"), "delta": c["delta"], "ci_low": (c["ci"] or [None])[0],
                             "ci_high": (c["ci"] or [None, None])[1], "p_value": c["p_value"], "p_holm": c["p_holm"],
                             "dz": c["dz"], "b_wins": w.get("b_wins"), "a_wins": w.get("a_wins"),
                             "ties": w.get("ties"), "verdict": c["verdict"],
                             "reseed_range95": r.get("reseed_range95"), "exceeds_reseeding": r.get("exceeds")})
    return buffer.getvalue()


def html_section(result: dict) -> str:
    """A self-contained ``<section>`` (every label escaped) for a report page."""
    parts = ['<section id="comparison"><h2>Comparison</h2>'] + [f"<p>{escape(line)}</p>" for line in _intro(result)]
    for metric, entry in result["metrics"].items():
        parts.append(f"<h3>{escape(_title(metric, entry))}</h3><div class=\"scroll\"><table class=\"comparison\">"
                     "<thead><tr><th>system</th><th>runs</th><th>n</th><th>mean</th><th>95 % CI</th></tr></thead><tbody>")
        for s in entry["systems"]:
            best = ' class="best"' if entry["best"] is not None and s["mean"] == entry["best"] else ""
            parts.append(f"<tr><td>{escape(s['system'])}</td><td>{s['runs']}</td><td>{s['n']}</td>"
                         f"<td{best}>{_num(s['mean'], metric=metric)}</td><td>{ci_text(s['ci'], metric=metric)}</td></tr>")
        parts.append("</tbody></table></div>")
        if entry["comparisons"]:
            parts.append("<div class=\"scroll\"><table class=\"comparison\"><thead><tr><th>B − A</th><th>n</th>"
                         "<th>Δ</th><th>95 % CI</th><th>p</th><th>p (Holm)</th><th>dz</th><th>wins B/A/ties</th><th>vs re-seeding</th>"
                         "<th>verdict</th></tr></thead><tbody>")
            for c in entry["comparisons"]:
                parts.append(f"<tr><td>{escape(c['b'])} − {escape(c['a'])}</td><td>{c['n']}</td>"
                             f"<td>{_num(c['delta'], sign=True, metric=metric)}</td>"
                             f"<td>{ci_text(c['ci'], True, metric, c.get('speakers'))}</td>"
                             f"<td>{p_text(c['p_value'])}</td><td>{p_text(c['p_holm'])}</td><td>{_num(c['dz'], 2)}</td>"
                             f"<td>{_wins(c)}</td><td>{escape(_reseed(c))}</td><td>{escape(c['verdict'])}</td></tr>")
            parts.append("</tbody></table></div>")
    return "".join(parts) + "</section>"


def html_page(result: dict) -> str:
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"Content-Security-Policy\" "
            "content=\"default-src 'none'; style-src 'unsafe-inline'\"><title>clonebench comparison</title><style>"
            "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:.5em 0 1.5em}.scroll{overflow-x:auto}"
            "td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right}td:first-child{text-align:left}"
            ".best{font-weight:bold}</style></head><body>" + html_section(result) + "</body></html>\n")


def json_text(result: dict) -> str:
    return json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n"


RENDER = {"md": markdown, "latex": latex, "csv": csv_text, "html": html_page, "json": json_text,
          "section": html_section}  # "section": the comparison inside the HTML report page


def _safe(value):
    """``value`` with every string (labels, paths, notes: untrusted) shown as on a terminal: control and invisible
    characters as visible escapes, secrets redacted."""
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, dict):
        return {_safe(k): _safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_safe(v) for v in value]
    return value


def render(result: dict, fmt: str) -> str:
    """The comparison as ``fmt`` text: the one rendering that is printed and written to a file, so both are the
    same escaped text (a terminal escape in a system name is shown as ``\\x1b`` in either)."""
    return RENDER[fmt](_safe(result))


def write_formats(result: dict, output: Path, formats: tuple[str, ...]) -> list[Path]:
    output = Path(output)
    written = []
    for fmt in formats:
        path = output / FILES[fmt]
        atomic_write_text(path, render(result, fmt))
        written.append(path)
    return written


def write_comparison(specs: list[str], output: Path, formats: tuple[str, ...] = ("md", "latex", "csv", "json"),
                     **options) -> list[Path]:
    """Load the systems ``specs`` name, compare them, write ``formats`` (plus the JSON) into ``output``."""
    from clonebench.report.multi_compare import compare_systems
    from clonebench.report.systems import load_systems

    result = compare_systems(load_systems(specs), **options)
    return write_formats(result, output, tuple(dict.fromkeys((*formats, "json"))))
