"""The per-sample table of the HTML report: one row per pair with its audio players, transcripts, the
Whisper hypothesis with its word differences (jiwer's alignment under the run's WER normalisation) and
every metric; with two runs, the two generated clips side by side (A/B) and paired deltas per metric. A run scored
for failure modes (``fail``) adds a "failures" column per run: its flags as badges, each with the flag's rule on
hover (``failures.thresholds.describe``); the rows carry ``data-failed``, ``data-flags`` and ``data-worst`` for the
page's failure filter and its default worst-first order.

Every text that comes from a manifest, a CSV or a server is escaped here (``html.escape``)."""

from __future__ import annotations

import os
import shutil
from html import escape
from pathlib import Path
from urllib.parse import quote

from clonebench.core.cells import as_number
from clonebench.core.hashing import sha256_file
from clonebench.failures.thresholds import FLAGS, describe
from clonebench.report.html_data import RunView, shown_metrics

LETTERS = "ABCDEFGH"
SHORT = {"generated_duration_s": "audio s", "synthesis_time_s": "request s"}  # no deltas for these


class AudioLinker:
    """``src`` of an <audio> element: a relative path to the file (default) or a copy inside the folder."""

    def __init__(self, out_dir: Path, copy: bool):
        self.out_dir, self.copy = Path(out_dir).resolve(), copy

    def src(self, path: Path | None, sha256: str | None) -> str | None:
        if path is None or not Path(path).is_file():
            return None
        if self.copy:
            if not (sha256 and len(sha256) == 64 and all(c in "0123456789abcdef" for c in sha256)):
                sha256 = sha256_file(path)
            name = f"{sha256}.wav"  # content-addressed: one copy per distinct clip
            target = self.out_dir / "audio" / name
            if not target.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
            return f"audio/{name}"
        return quote(os.path.relpath(Path(path).resolve(), self.out_dir).replace(os.sep, "/"))


def word_diff(reference: str, hypothesis: str, normalisation: str | None) -> str:
    """The hypothesis as HTML: substituted/inserted words in <ins>, missing reference words in <del>."""
    import jiwer

    from clonebench.evaluate.protocols.wer_text import NORMALISATIONS, normalise

    name = normalisation if normalisation in NORMALISATIONS else "lowercase_v1"
    ref, hyp = normalise(reference or "", name), normalise(hypothesis or "", name)
    if not hyp.split():
        return f'<del title="missing">{escape(ref)}</del>' if ref.split() else ""
    if not ref.split():
        return f'<ins title="inserted">{escape(hyp)}</ins>'
    out = jiwer.process_words(ref, hyp)
    r, h = out.references[0], out.hypotheses[0]
    parts = []
    for chunk in out.alignments[0]:
        ref_words = escape(" ".join(r[chunk.ref_start_idx:chunk.ref_end_idx]))
        hyp_words = escape(" ".join(h[chunk.hyp_start_idx:chunk.hyp_end_idx]))
        if chunk.type == "equal":
            parts.append(hyp_words)
        elif chunk.type == "substitute":
            parts.append(f'<del title="reference">{ref_words}</del> <ins title="hypothesis">{hyp_words}</ins>')
        elif chunk.type == "delete":
            parts.append(f'<del title="missing">{ref_words}</del>')
        else:
            parts.append(f'<ins title="inserted">{hyp_words}</ins>')
    return " ".join(parts)


def _player(src: str | None, label: str) -> str:
    if src is None:
        return f'<div class="clip"><span class="tag">{escape(label)}</span> <em>not available</em></div>'
    return (f'<div class="clip"><span class="tag">{escape(label)}</span>'
            f'<audio controls preload="auto" src="{escape(src)}"></audio></div>')


def _number(value, digits: int = 3) -> str:
    number = as_number(value)
    return "–" if number is None else f"{number:.{digits}f}"


def columns(views: list[RunView]) -> list[dict]:
    """Sortable metric columns: with two runs the B−A deltas first (the point of an A/B page), then per run (A, B,
    ...)."""
    metrics = shown_metrics(views)
    cols = []
    if len(views) == 2:
        cols += [{"key": m, "delta": True, "title": f"Δ{SHORT.get(m, m)} (B−A)"} for m in metrics if m not in SHORT]
    for metric in metrics:
        for k, _ in enumerate(views):
            cols.append({"key": metric, "run": k,
                         "title": SHORT.get(metric, metric) + (f" {LETTERS[k]}" if len(views) > 1 else "")})
    return cols


def row_flags(row: dict | None) -> list[str] | None:
    """A per-sample row's failure flags (FLAGS order, then any unknown one); None: no failure verdict (old run)."""
    if not row or as_number(row.get("fail")) is None:
        return None
    raised = [f.strip() for f in str(row.get("failures") or "").split(";") if f.strip()]
    return [f for f in FLAGS if f in raised] + [f for f in raised if f not in FLAGS]


def has_failures(views: list[RunView]) -> bool:
    """Some run has a failure verdict for some pair (it was scored with ``fail``)."""
    return any(row_flags(s) is not None for v in views for s in v.samples.values())


def flag_title(flag: str) -> str:
    return describe(flag) if flag in FLAGS else flag


def _failure_cell(row: dict | None) -> tuple[str, int | None]:
    """The failures cell of one run (badges; "–": no verdict) and its sort value (number of flags, >= 1 if failed)."""
    flags = row_flags(row)
    if flags is None:
        return '<td class="failures" data-v="">–</td>', None
    score = max(len(flags), 1) if as_number(row.get("fail")) == 1.0 else 0
    if not flags:
        badges = '<span class="ok">ok</span>' if not score else '<span class="badge">failed</span>'
    else:
        badges = "".join(f'<span class="badge flag-{escape(f)}" data-flag="{escape(f)}" title="{escape(flag_title(f))}">'
                         f'{escape(f)}</span>' for f in flags)
    detail = f'<div class="fdetail">{escape(row["failure_detail"])}</div>' if row.get("failure_detail") else ""
    return f'<td class="failures" data-v="{score}">{badges}{detail}</td>', score


def failure_titles(views: list[RunView]) -> list[str]:
    """The failures columns' titles (one per run), empty when no run has a failure verdict."""
    if not has_failures(views):
        return []
    return ["failures" + (f" {LETTERS[k]}" if len(views) > 1 else "") for k, _ in enumerate(views)]


def failure_summary(view: RunView) -> dict | None:
    """The run's failure_modes (metrics.json; else computed from its rows), None when it was not scored for them."""
    if view.table.failure_modes:
        return view.table.failure_modes
    if not any(row_flags(s) is not None for s in view.samples.values()):
        return None
    from clonebench.failures.rates import failure_rates

    return failure_rates([{**s, "fail": as_number(s.get("fail"))} for s in view.samples.values()])


def _pct(value) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def failure_summary_html(views: list[RunView]) -> str:
    """One line per run with failure modes: the failure rate with its interval, then each raised flag's rate."""
    lines = []
    for k, view in enumerate(views):
        modes = failure_summary(view)
        if not modes:
            continue
        ci = modes.get("ci")
        ci_text = f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else ""
        flags = []
        for flag, entry in (modes.get("flags") or {}).items():
            if not entry.get("count"):
                continue
            fci = entry.get("ci")
            flags.append(f'<span class="badge flag-{escape(flag)}" title="{escape(flag_title(flag))}">{escape(flag)}'
                         f'</span> {entry["count"]} ({_pct(entry.get("rate"))}'
                         + (f" [{100 * fci[0]:.1f}, {100 * fci[1]:.1f}]" if fci else "") + ")")
        who = f"{LETTERS[k]} = {escape(view.label)}" if len(views) > 1 else escape(view.label)
        lines.append(f'<p class="failure-summary">Failures ({who}): {modes.get("failed", 0)} of {modes.get("n", 0)} '
                     f'utterances, {_pct(modes.get("rate"))}{ci_text}'
                     f'{" (" + escape(str(modes["ci_method"])) + ")" if modes.get("ci_method") else ""}'
                     f'{"; " + ", ".join(flags) if flags else "; no flag raised"}.</p>')
    return "".join(lines)


def _cell_value(views: list[RunView], pair_id: str, col: dict) -> float | None:
    if col.get("delta"):
        a, b = (as_number(v.samples.get(pair_id, {}).get(col["key"])) for v in views)
        return None if a is None or b is None else b - a
    return as_number(views[col["run"]].samples.get(pair_id, {}).get(col["key"]))


def sample_rows(views: list[RunView], linker: AudioLinker) -> tuple[str, list[dict]]:
    """The <thead> + <tbody> HTML of the per-sample table, and its metric columns. With several runs the numbers
    (deltas first) come before the audio and transcripts, so a 1,280 px window shows them without scrolling."""
    cols = columns(views)
    failures = failure_titles(views)
    failure_heads = "".join(f'<th data-sort="num" data-key="{escape(t)}" class="failures">{escape(t)}</th>'
                            for t in failures)
    media = "<th>audio</th><th>transcripts</th>"
    numbers = failure_heads + "".join(f'<th data-sort="num" data-key="{escape(c["title"])}">{escape(c["title"])}</th>'
                                      for c in cols)
    head = ("<thead><tr><th data-sort=\"text\">pair</th><th data-sort=\"text\">speaker</th>"
            + (numbers + media if len(views) > 1 else media + numbers) + "</tr></thead>")
    body = []
    first = views[0]
    order = list(first.samples) + [p for v in views[1:] for p in v.samples if p not in first.samples]
    for pair_id in order:
        rows = [v.samples.get(pair_id) for v in views]
        base = next(r for r in rows if r)
        speaker = str(base.get("speaker_id", ""))
        clips = [_player(linker.src(base["prompt_path"], base.get("prompt_sha256")), "prompt"),
                 _player(linker.src(base["target_path"], base.get("target_sha256")), "target")]
        generated = [_player(linker.src(r["generated_path"], r.get("generated_sha256")) if r else None,
                             f"generated {LETTERS[k]}" if len(views) > 1 else "generated")
                     for k, r in enumerate(rows)]
        audio = "".join(clips) + (f'<div class="ab">{"".join(generated)}</div>' if len(views) > 1 else generated[0])
        texts = [f'<div class="ref"><span class="tag">target text</span> {escape(base.get("target_text") or "")}</div>']
        for k, (view, row) in enumerate(zip(views, rows)):
            if not row:
                continue
            letter = f" {LETTERS[k]}" if len(views) > 1 else ""
            if (row.get("hypothesis") or "").strip() or as_number(row.get("wer")) is not None:
                normalisation = view.table.protocols.get("wer", {}).get("normalisation")
                diff = word_diff(base.get("target_text") or "", row.get("hypothesis") or "", normalisation)
                texts.append(f'<div class="hyp"><span class="tag">Whisper{letter}</span> {diff}</div>')
            if row.get("emotion_target") or row.get("emotion_generated"):
                texts.append(f'<div class="emo"><span class="tag">emotion{letter}</span> target '
                             f'{escape(row.get("emotion_target") or "–")} · generated '
                             f'{escape(row.get("emotion_generated") or "–")}</div>')
            if row.get("errors"):
                texts.append(f'<div class="err">{escape(row["errors"])}</div>')
        cells, scores, flagged = [], [], []
        if failures:
            for row in rows:
                html, score = _failure_cell(row)
                cells.append(html)
                scores.append(score or 0)
                flagged += [f for f in row_flags(row) or [] if f not in flagged]
        marks = (f' data-failed="{int(any(scores))}" data-flags="{escape(" ".join(flagged))}" '
                 f'data-worst="{sum(scores)}"') if failures else ""
        for col in cols:
            value = _cell_value(views, pair_id, col)
            cells.append(f'<td class="num" data-v="{"" if value is None else repr(value)}">{_number(value)}</td>')
        media = f'<td class="audio">{audio}</td><td class="texts">{"".join(texts)}</td>'
        body.append(f'<tr data-speaker="{escape(speaker)}"{marks}><td data-v="{escape(pair_id)}">{escape(pair_id)}</td>'
                    f'<td data-v="{escape(speaker)}">{escape(speaker)}</td>'
                    f'{"".join(cells) + media if len(views) > 1 else media + "".join(cells)}</tr>')
    return head + "<tbody>" + "\n".join(body) + "</tbody>", cols
