"""Serving plots as PNG (matplotlib, Agg): the TTFA CDF per level, throughput and starvation against concurrency."""

from __future__ import annotations

from pathlib import Path

from clonebench.report.serving import level_label


def write_serving_plots(data: dict, out: Path, stem: str) -> list[Path]:
    """``<stem>-ttfa-cdf.png``, and per load shape ``<stem>-<mode>-throughput.png`` / ``-starvation.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    levels = data.get("levels", [])
    written = []
    fig, ax = plt.subplots(figsize=(6, 4))
    for level in levels:
        ttfa = sorted(r["ttfa_s"] for r in level["records"] if r["phase"] == "measured" and r["ok"])
        if ttfa:
            ax.step([ttfa[0], *ttfa], [0.0, *((i + 1) / len(ttfa) for i in range(len(ttfa)))], where="post",
                    label=level_label(level))
    ax.set(xlabel="time to first audio (s)", ylabel="share of requests", title="TTFA CDF per level", ylim=(0, 1.02))
    if levels:
        ax.legend(fontsize=8)
    fig.tight_layout()
    written.append(out / f"{stem}-ttfa-cdf.png")
    fig.savefig(written[-1], dpi=120)
    plt.close(fig)
    for mode, unit in (("closed", "requests in flight"), ("open", "arrivals per second")):
        shape = [x for x in levels if x["mode"] == mode]
        if not shape:
            continue
        x = [level["level"] for level in shape]
        for key, label in (("throughput", "audio s per wall s"), ("starvation_rate", "share of streams starved")):
            y = [level["summary"][key] for level in shape]
            if all(v is None for v in y):
                continue
            fig, ax = plt.subplots(figsize=(5, 3.5))
            ax.plot(x, [float("nan") if v is None else v for v in y], marker="o")
            ax.set(xlabel=unit, ylabel=label, title=f"{label} ({mode} loop)")
            if mode == "closed":
                ax.set_xscale("log", base=2)
            fig.tight_layout()
            name = "throughput" if key == "throughput" else "starvation"
            written.append(out / f"{stem}-{mode}-{name}.png")
            fig.savefig(written[-1], dpi=120)
            plt.close(fig)
    return written
