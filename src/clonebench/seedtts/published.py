"""The Seed-TTS-eval numbers papers printed (reproduction/seedtts/published_table.json, derived by
scripts/build_seedtts_published.py from the project's data file, each value with its citation): shown after a
table's runs, marked published. They were computed by the benchmark's own scripts, which skip missing outputs, on
other systems' outputs: context for the runs, never a competitor ranked with them."""

from __future__ import annotations

from pathlib import Path

from clonebench.core.errors import ClonebenchError
from clonebench.core.paths import REPRODUCTION_DIR
from clonebench.core.untrusted import UntrustedFileError, read_json

PUBLISHED = REPRODUCTION_DIR / "seedtts" / "published_table.json"
LABEL = "published (their outputs, the benchmark's scripts: missing outputs skipped)"


def load_published(path: Path = PUBLISHED) -> dict:
    try:
        table = read_json(path, max_bytes=4 * 1024 * 1024, what="published Seed-TTS-eval table")
    except UntrustedFileError as exc:
        raise ClonebenchError(f"{exc}; rebuild it: python scripts/build_seedtts_published.py") from None
    if not isinstance(table, dict) or table.get("schema") != "clonebench.seedtts_published/v1":
        raise ClonebenchError(f"{path}: not a clonebench.seedtts_published/v1 table; rebuild it: "
                              "python scripts/build_seedtts_published.py")
    return table


def _number(value, percent: bool) -> str:
    return "–" if value is None else (f"{value:.2f}" if percent else f"{value:.3f}")


def published_markdown(test_sets: list[str], path: Path = PUBLISHED) -> str:
    """Rows per published system for ``test_sets`` (the runs' test sets): | system | set: WER (%) | set: SIM |,
    then the citations."""
    table = load_published(path)
    header = ["system"] + [f"{name} {kind}" for name in test_sets for kind in ("WER (%) ↓", "SIM ↑")]
    lines = [f"**{LABEL}**", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    cites = []
    for system in table["systems"]:
        cells = []
        for name in test_sets:
            result = system["results"].get(name) or {}
            cells += [_number(result.get("wer_percent"), True), _number(result.get("sim"), False)]
        if any(c != "–" for c in cells):
            lines.append(f"| {system['system']} (published) | " + " | ".join(cells) + " |")
            cites += [f"{system['system']}: {s['source']}, {s['where']}" for s in system["sources"]]
    return "\n".join(lines + [""] + [f"- {c}" for c in dict.fromkeys(cites)]) + "\n"
