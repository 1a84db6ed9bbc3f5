"""Per-speaker SIM boxes and per-utterance WER histograms of evaluated runs, as PNG files (matplotlib, Agg)."""

from __future__ import annotations

from pathlib import Path

from clonebench.report.tables import ResultTable

SIM_PNG, WER_PNG = "sim_per_speaker.png", "wer_per_utterance.png"


def _save(fig, ax, xlabel: str, ylabel: str, title: str, path: Path) -> Path:
    """Label, lay out and write one figure as PNG, then free it."""
    import matplotlib.pyplot as plt

    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_plots(tables: list[ResultTable], out: Path) -> list[Path]:
    """Write the plots the runs have values for (SIM, WER) into ``out``; return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    speakers = sorted({str(r["speaker_id"]) for t in tables for r in t.rows})
    if any(v is not None for t in tables for v in t.values("sim")):
        fig, ax = plt.subplots(figsize=(max(6, len(speakers) * 0.6 * len(tables)), 4))
        width = 0.8 / len(tables)
        for k, table in enumerate(tables):
            per = [[v for r, v in zip(table.rows, table.values("sim")) if str(r["speaker_id"]) == s and v is not None]
                   for s in speakers]
            positions = [i + k * width for i in range(len(speakers))]
            ax.boxplot([p or [float("nan")] for p in per], positions=positions, widths=width * 0.9, patch_artist=True,
                       boxprops={"facecolor": f"C{k}", "alpha": 0.5}, medianprops={"color": "black"})
            ax.plot([], [], color=f"C{k}", label=table.label, linewidth=6, alpha=0.5)
        ax.set_xticks([i + width * (len(tables) - 1) / 2 for i in range(len(speakers))], speakers, rotation=45)
        written.append(_save(fig, ax, "speaker", "SIM (ECAPA cosine)", "Speaker similarity per speaker", out / SIM_PNG))
    if any(v is not None for t in tables for v in t.values("wer")):
        fig, ax = plt.subplots(figsize=(6, 4))
        for k, table in enumerate(tables):
            values = [v for v in table.values("wer") if v is not None]
            ax.hist(values, bins=20, range=(0, max(1.0, max(values, default=1.0))), alpha=0.5, color=f"C{k}",
                    label=f"{table.label} (n={len(values)})")
        written.append(_save(fig, ax, "per-utterance WER", "utterances", "WER per utterance", out / WER_PNG))
    return written
