"""What a serving level's requests add up to, and the capacity line across levels."""

from __future__ import annotations

from collections import Counter
from statistics import median

from clonebench.serving.settings import ServingSettings
from clonebench.stats.quantiles import percentile_cis

PERCENTILES = (50.0, 95.0, 99.0)


def level_summary(records: list[dict], settings: ServingSettings, seed: int) -> dict:
    """Over the level's measured requests (``phase == "measured"``; its ramp is left out)."""
    measured = [r for r in records if r["phase"] == "measured"]
    ok = [r for r in measured if r["ok"]]
    streamed = [r for r in ok if r["player"] is not None]
    starved = [r for r in streamed if r["player"]["stalls"] > 0]

    def cis(key: str) -> dict:
        return percentile_cis([r[key] for r in ok if r[key] is not None], PERCENTILES,
                              settings.bootstrap_resamples, settings.confidence, seed)
    window = None
    if ok:
        window = max(r["started_s"] + r["total_s"] for r in ok) - min(r["started_s"] for r in measured)
    audio = sum(r["audio_s"] for r in ok)
    return {
        "requests": len(measured), "ok": len(ok), "errors": len(measured) - len(ok),
        "error_classes": dict(Counter(r["error_class"] for r in measured if not r["ok"])),
        "ttfa_s": cis("ttfa_s"), "ttfb_s": cis("ttfb_s"), "total_s": cis("total_s"),
        "rtf_p50": median([r["rtf"] for r in ok if r["rtf"] is not None]) if ok else None,
        "streamed": len(streamed),
        "starvation_rate": len(starved) / len(streamed) if streamed else None,
        "stalls_mean": sum(r["player"]["stalls"] for r in streamed) / len(streamed) if streamed else None,
        "stalled_s_mean": sum(r["player"]["stalled_s"] for r in streamed) / len(streamed) if streamed else None,
        "audio_s": round(audio, 6),
        "wall_s": None if window is None else round(window, 6),
        "throughput": round(audio / window, 6) if window else None,
    }


def meets(summary: dict, settings: ServingSettings) -> tuple[bool, str]:
    """Does a level meet the budget: no error, p95 TTFA within it, starvation at most the bound."""
    p95 = summary["ttfa_s"]["p95"]["value"]
    if summary["errors"] or not summary["ok"]:
        return False, f"{summary['errors']} of {summary['requests']} requests failed"
    if p95 is None or p95 > settings.ttfa_budget_s:
        return False, f"p95 TTFA {p95:.3f} s above the {settings.ttfa_budget_s:g} s budget"
    rate = summary["starvation_rate"]
    if rate is not None and rate > settings.starvation_bound:
        return False, f"{rate:.0%} of streams starved (bound {settings.starvation_bound:.0%})"
    return True, "within the budget"


def capacity(levels: list[dict], settings: ServingSettings, mode: str) -> dict:
    """The largest level (in-flight requests, or arrivals per second) at which it and every lower level meet the
    budget; None when the lowest does not."""
    chosen, reason = None, "no level measured"
    for level in sorted((x for x in levels if x["mode"] == mode), key=lambda x: x["level"]):
        ok, reason = meets(level["summary"], settings)
        if not ok:
            reason = f"level {level['level']:g}: {reason}"
            break
        chosen = level["level"]
    return {"mode": mode, "capacity": chosen, "ttfa_budget_s": settings.ttfa_budget_s,
            "starvation_bound": settings.starvation_bound, "limited_by": reason}
