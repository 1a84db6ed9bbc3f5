"""Seed-TTS-eval results per test set, the way papers print them: WER in percent (the mean of per-utterance WERs)
and SIM (the mean cosine with the prompt), each with an utterance-bootstrap interval, and the coverage.

Missing outputs. The benchmark's scripts skip an utterance whose output file is missing (and, for SIM, one whose
verification raised): a model that fails on the hardest sentences scores better for failing. Here an utterance
without a score counts as a failure by default (``count``): WER 100 % (every word of the text is missing) and SIM
0. ``skip`` reproduces the scripts' behaviour, for comparison with published numbers only; every line printed with
it says so.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

from clonebench.core.cells import as_number
from clonebench.core.errors import ClonebenchError
from clonebench.data.seedtts import TEST_SETS, benchmark_set, is_meta_list
from clonebench.report.tables import ResultTable, load_run
from clonebench.stats.utterance import bootstrap_ci

RULES = {"count": "missing outputs count as failures (WER 100 %, SIM 0)",
         "skip": "skip_missing: missing outputs skipped, as the benchmark's scripts do (a model that fails scores "
                 "better; for comparison with published numbers only)"}
FAILED = {"seed_wer": 1.0, "seed_sim": 0.0}
WER_COLUMNS = ("seed_wer_en", "seed_wer_zh")  # one WER per language (Whisper-large-v3 / Paraformer-zh)
ORDER = ("test-zh", "test-en", "test-hard")  # the papers' column order
RESAMPLES, CONFIDENCE, SEED = 1000, 0.95, 20260930
PUBLISHED_SETS = frozenset(TEST_SETS.values())


@dataclass(frozen=True)
class Score:
    mean: float | None
    ci: list[float] | None
    n: int


@dataclass(frozen=True)
class TestSetResult:
    test_set: str
    run: str
    listed: int
    scored: dict[str, int]        # metric -> utterances with a value
    rule: str
    metrics: dict[str, Score]     # seed_wer (a fraction: seed_wer_en or seed_wer_zh, the set's language), seed_sim
    system: str = ""              # the run's name (its run_name, else its folder's): which model the row is

    def as_dict(self) -> dict:
        return {**asdict(self), "rule_text": RULES[self.rule]}


def run_test_set(table: ResultTable, given: str | None = None) -> str:
    """The test set a run covered: its meta list's name (test-en, test-zh, test-hard, ...), or ``given`` for a run
    over another manifest. A ``given`` name that contradicts the run's own meta list is refused when either is a
    published test set: the row would sit beside that set's published numbers."""
    manifest = table.dataset_manifest  # read by load_run from the generation run's manifest
    own = benchmark_set(Path(manifest)) if manifest and is_meta_list(Path(manifest)) else None
    if given and own and given != own and (given in PUBLISHED_SETS or own in PUBLISHED_SETS):
        raise ClonebenchError(f"{given}={table.run_dir or table.label}: the run was generated from {manifest}, which "
                              f"is {own}, not {given}; drop the name (the run's own list names it) or name it {own}")
    if given or own:
        return given or own
    raise ClonebenchError(f"{table.run_dir or table.label}: not a run over a Seed-TTS-eval meta list (its "
                          "dataset.manifest_filename is no .lst); name its test set: NAME=RUN, e.g. test-en=RUN")


def summarise(table: ResultTable, name: str, rule: str = "count") -> TestSetResult:
    """One run's results on test set ``name`` under the missing-output ``rule`` (``count`` or ``skip``)."""
    if rule not in RULES:
        raise ClonebenchError(f"missing-output rule {rule!r}: choose one of {sorted(RULES)}")
    metrics, scored = {}, {}
    wer = next((c for c in WER_COLUMNS if any(r.get(c) not in (None, "") for r in table.rows)), "seed_wer")
    for metric, failed in FAILED.items():
        column = wer if metric == "seed_wer" else metric
        values = [as_number(r.get(column)) for r in table.rows]
        present = [v for v in values if v is not None and math.isfinite(v)]
        scored[metric] = len(present)
        if not present and all(r.get(column) in (None, "") for r in table.rows):
            continue  # the run did not score this metric
        used = present if rule == "skip" else [failed if v is None else v for v in values]
        mean = sum(used) / len(used) if used else None
        metrics[metric] = Score(mean, bootstrap_ci(used, RESAMPLES, CONFIDENCE, SEED), len(used))
    if not metrics:
        raise ClonebenchError(f"{table.run_dir or table.label}: no seed_wer_en, seed_wer_zh or seed_sim column: score "
                              "the run with evaluation.metrics=[seed_wer_en,seed_sim] (test-en) or "
                              "[seed_wer_zh,seed_sim] (test-zh, test-hard) (docs/seed-tts-eval.md)")
    return TestSetResult(name, str(table.run_dir or table.label), len(table.rows), scored, rule, metrics, table.label)


def load(specs: list[str], rule: str = "count") -> list[TestSetResult]:
    """``RUN`` or ``NAME=RUN`` arguments -> results, in the papers' test set order."""
    out = []
    for spec in specs:
        name, _, path = spec.rpartition("=") if "=" in spec else ("", "", spec)
        table = load_run(Path(path))
        out.append(summarise(table, run_test_set(table, name or None), rule))
    rank = {n: i for i, n in enumerate(ORDER)}
    return sorted(out, key=lambda r: (rank.get(r.test_set, len(ORDER)), r.test_set))


def _escape(text: str) -> str:
    """A label in a markdown table cell: a pipe would end the cell, a newline the row."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _cell(score: Score | None, percent: bool) -> str:
    if score is None or score.mean is None:
        return "–"
    scale, digits = (100.0, 2) if percent else (1.0, 3)
    text = f"{score.mean * scale:.{digits}f}"
    if score.ci:
        text += f" [{score.ci[0] * scale:.{digits}f}, {score.ci[1] * scale:.{digits}f}]"
    return text


def systems(results: list[TestSetResult]) -> list[str]:
    """Each result's system label: its run's name, or its run folder where two results share a name."""
    names = [r.system or Path(r.run).name for r in results]
    return [r.run if names.count(n) > 1 else n for r, n in zip(results, names)]


def markdown(results: list[TestSetResult]) -> str:
    """| test set | system | WER (%) ↓ | SIM ↑ | coverage | rule |, one row per run."""
    lines = ["| test set | system | WER (%) ↓ | SIM ↑ | coverage | missing outputs |", "|---|---|---|---|---|---|"]
    for r, system in zip(results, systems(results)):
        covered = max(r.scored.values()) if r.scored else 0
        lines.append(f"| {r.test_set} | {_escape(system)} | {_cell(r.metrics.get('seed_wer'), True)} | "
                     f"{_cell(r.metrics.get('seed_sim'), False)} | {covered}/{r.listed} | "
                     f"{'counted as failures' if r.rule == 'count' else 'SKIPPED (scripts)'} |")
    notes = sorted({RULES[r.rule] for r in results})
    return "\n".join(lines + [""] + [f"Missing outputs: {n}." for n in notes]
                     + ["Seed-TTS-eval protocol (Whisper-large-v3 / Paraformer-zh WER, WavLM-large ECAPA-TDNN SIM "
                        "with the prompt); intervals: utterance bootstrap, 95 %."]) + "\n"
