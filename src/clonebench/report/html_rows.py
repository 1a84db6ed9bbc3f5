"""The per-sample table of the HTML report: one row per pair with its audio players, transcripts, the
Whisper hypothesis with its word differences (jiwer's alignment under the run's WER normalisation) and
every metric; with two runs, the two generated clips side by side (A/B) and paired deltas per metric.

Every text that comes from a manifest, a CSV or a server is escaped here (``html.escape``)."""

from __future__ import annotations

import os
import shutil
from html import escape
from pathlib import Path
from urllib.parse import quote

from clonebench.core.hashing import sha256_file
from clonebench.report.html_data import RunView, shown_metrics
from clonebench.report.tables import as_number

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

    from clonebench.evaluate.wer_text import NORMALISATIONS, normalise

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
    """Sortable metric columns: per run (A, B, ...), then B−A deltas when there are two runs."""
    metrics = shown_metrics(views)
    cols = []
    for metric in metrics:
        for k, _ in enumerate(views):
            cols.append({"key": metric, "run": k,
                         "title": SHORT.get(metric, metric) + (f" {LETTERS[k]}" if len(views) > 1 else "")})
    if len(views) == 2:
        cols += [{"key": m, "delta": True, "title": f"Δ{SHORT.get(m, m)} (B−A)"} for m in metrics if m not in SHORT]
    return cols


def _cell_value(views: list[RunView], pair_id: str, col: dict) -> float | None:
    if col.get("delta"):
        a, b = (as_number(v.samples.get(pair_id, {}).get(col["key"])) for v in views)
        return None if a is None or b is None else b - a
    return as_number(views[col["run"]].samples.get(pair_id, {}).get(col["key"]))


def sample_rows(views: list[RunView], linker: AudioLinker) -> tuple[str, list[dict]]:
    """The <thead> + <tbody> HTML of the per-sample table, and its metric columns."""
    cols = columns(views)
    head = ("<thead><tr><th data-sort=\"text\">pair</th><th data-sort=\"text\">speaker</th><th>audio</th>"
            "<th>transcripts</th>" + "".join(f'<th data-sort="num" data-key="{escape(c["title"])}">'
                                             f'{escape(c["title"])}</th>' for c in cols) + "</tr></thead>")
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
        cells = []
        for col in cols:
            value = _cell_value(views, pair_id, col)
            cells.append(f'<td class="num" data-v="{"" if value is None else repr(value)}">{_number(value)}</td>')
        body.append(f'<tr data-speaker="{escape(speaker)}"><td data-v="{escape(pair_id)}">{escape(pair_id)}</td>'
                    f'<td data-v="{escape(speaker)}">{escape(speaker)}</td><td class="audio">{audio}</td>'
                    f'<td class="texts">{"".join(texts)}</td>{"".join(cells)}</tr>')
    return head + "<tbody>" + "\n".join(body) + "</tbody>", cols
