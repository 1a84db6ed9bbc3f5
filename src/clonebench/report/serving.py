"""The serving section: a serving run's ``serving.json`` as Markdown (tables and the capacity lines)."""

from __future__ import annotations


def _ms(cell: dict | None) -> str:
    if not cell or cell.get("value") is None:
        return "-"
    ci = cell.get("ci")
    return f"{cell['value'] * 1000:.0f}" + (f" [{ci[0] * 1000:.0f}, {ci[1] * 1000:.0f}]" if ci else "")


def _num(value, fmt: str = ".2f") -> str:
    return "-" if value is None else format(value, fmt)


def level_label(level: dict) -> str:
    return f"{level['level']:g} in flight" if level["mode"] == "closed" else f"{level['level']:g}/s arrivals"


def serving_markdown(data: dict, title: str | None = None) -> str:
    """Per level: TTFA and TTFB percentiles in ms (bootstrap intervals), starvation, throughput, errors."""
    streamed = data.get("streamed", True)
    lines = [f"### Serving: {title or data.get('protocol', '')}", ""]
    cold = data.get("cold") or {}
    if cold:
        lines += [f"Cold request: TTFA {_num(cold.get('ttfa_s'), '.3f')} s, TTFB {_num(cold.get('ttfb_s'), '.3f')} s, "
                  f"total {_num(cold.get('total_s'), '.3f')} s" + ("" if cold.get("ok") else
                                                                    f" (failed: {cold.get('error_class')})"), ""]
    head = "| level | ok/sent | TTFA p50 ms | TTFA p95 ms | TTFA p99 ms | TTFB p50 ms | RTF p50 | throughput (audio s/s) |"
    rule = "|---|---|---|---|---|---|---|---|"
    if streamed:
        head += " starved | stalls/stream | stalled s/stream |"
        rule += "---|---|---|"
    lines += [head, rule]
    for level in data.get("levels", []):
        s = level["summary"]
        row = (f"| {level_label(level)} | {s['ok']}/{s['requests']} | {_ms(s['ttfa_s']['p50'])} | "
               f"{_ms(s['ttfa_s']['p95'])} | {_ms(s['ttfa_s']['p99'])} | {_ms(s['ttfb_s']['p50'])} | "
               f"{_num(s['rtf_p50'])} | {_num(s['throughput'])} |")
        if streamed:
            rate = s["starvation_rate"]
            row += (f" {'-' if rate is None else f'{rate:.0%}'} | {_num(s['stalls_mean'])} | "
                    f"{_num(s['stalled_s_mean'], '.3f')} |")
        lines.append(row)
    for cap in data.get("capacity", []):
        unit = "in flight" if cap["mode"] == "closed" else "arrivals/s"
        found = "none" if cap["capacity"] is None else f"{cap['capacity']:g} {unit}"
        lines += ["", f"Capacity ({cap['mode']} loop, p95 TTFA <= {cap['ttfa_budget_s']:g} s, starved <= "
                      f"{cap['starvation_bound']:.0%}, no error): {found}; limited by {cap['limited_by']}"]
    if not streamed:
        lines += ["", "One-shot answers: no simulated player (the whole answer arrives at once)."]
    return "\n".join(lines)
