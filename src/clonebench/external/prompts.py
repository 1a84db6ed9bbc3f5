"""Prompt files for models that are not servers: what to generate, in the formats batch scripts read.

Written exactly as rvcbench 2.2.1's ``rvcbench prompts`` writes them (``benchmark/submission.py``:
``export_prompts``, ``write_batch_lists``), so a script written for one works with the other:

- ``references/<task>/<pair_id><suffix>``: each reference (prompt) recording, a byte copy of the dataset's file
  (the suffix is the manifest's ``prompt_file_name`` suffix, ``.wav`` when it has none); the copy's sha256 is
  checked against the verified input. Target recordings are never written: they are the hidden answers.
- ``prompts.jsonl``: one JSON object per utterance (``ensure_ascii=False``) with the fields, in this order, ``id``,
  ``task``, ``pair_id``, ``speaker_id``, ``reference_audio`` (relative), ``reference_sha256``, ``reference_text``,
  ``text``, ``language`` (the target language as the manifest gives it), ``output_file`` (``<task>/<pair_id>.wav``).
- ``prompts.tsv`` (ZipVoice ``--test-list``): ``id<TAB>reference_text<TAB>reference_audio<TAB>text``;
  ``prompts.lst`` (Seed-TTS-eval meta lists: F5-TTS, CosyVoice, ...): the same fields joined by ``|``. Reference
  paths there are absolute; a line break inside a text (with the blanks around it) becomes one space; a field
  holding the separator is refused, naming the utterance.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from clonebench.core.atomic import atomic_write_bytes, atomic_write_json, atomic_write_text
from clonebench.core.errors import ClonebenchError
from clonebench.data.audio_cache import verified_bytes
from clonebench.external.pair_sets import PairSet

BATCH_LISTS = {"prompts.tsv": "\t", "prompts.lst": "|"}
LINE_BREAK = re.compile(r"[ \t]*(?:\r\n|\r|\n)[ \t]*")


def prompt_entries(pair_set: PairSet) -> list[dict]:
    """One entry per pair of the set, in order, with ``prompts.jsonl``'s fields in rvcbench's order."""
    entries = []
    for sample in pair_set.samples:
        suffix = Path(sample.row.prompt_file_name).suffix or ".wav"
        reference = Path("references") / pair_set.task / f"{sample.pair_id}{suffix}"
        entries.append({"id": pair_set.output_id(sample), "task": pair_set.task, "pair_id": sample.pair_id,
                        "speaker_id": sample.speaker_id, "reference_audio": reference.as_posix(),
                        "reference_sha256": sample.prompt.sha256, "reference_text": sample.row.prompt_text,
                        "text": sample.row.target_text, "language": sample.row.target_language,
                        "output_file": f"{pair_set.task}/{sample.pair_id}.wav"})
    return entries


def one_line(text: str) -> str:
    return LINE_BREAK.sub(" ", text)


def batch_list(entries: list[dict], output: Path, separator: str, name: str) -> str:
    """The text of one batch list; reference paths absolute under ``output``."""
    output = Path(output).resolve()
    lines = []
    for entry in entries:
        fields = [entry["id"], one_line(entry["reference_text"]), str(output / entry["reference_audio"]),
                  one_line(entry["text"])]
        if any(separator in f for f in fields):
            raise ClonebenchError(f"{entry['id']}: a field contains {separator!r}, so it cannot be written to {name} "
                                  f"(fix the manifest's text, or read prompts.jsonl instead)")
        lines.append(separator.join(fields))
    return "\n".join(lines) + "\n"


README = """# Prompts: {pairs} utterances to generate

Source: {sources}. Each utterance has a reference recording (`reference_audio`, its transcript
`reference_text`) and a `text` to speak in that voice. Use whichever file suits your code:

| File | Format | Read by |
| --- | --- | --- |
| `prompts.jsonl` | one JSON object per line, with language and speaker | your own script |
| `prompts.tsv` | `id<TAB>reference_text<TAB>reference_audio<TAB>text` | ZipVoice `--test-list` |
| `prompts.lst` | `id|reference_text|reference_audio|text` | Seed-TTS-eval scripts (F5-TTS, CosyVoice, ...) |

Reference paths in the lists are absolute; export again if you move this folder. A line break inside a
text is written as a space in the lists; `prompts.jsonl` keeps the exact text.

Save each result as a WAV file named `<id>.wav` in one folder (or `<task>/<pair_id>.wav`), then score it:

    clonebench score {source_args} --generated <folder> --output <results folder>

Target recordings are not exported; a submitted file identical to one is refused as a leak.
"""


def _source(origin: dict) -> str:
    if origin.get("kind") == "suite":
        return f"suite {origin['suite']['suite']}"
    return f"{origin.get('kind')} {origin.get('manifest')}"


def export_prompts(pair_sets: list[PairSet], output: Path, source_args: str, suite_record: dict | None = None) -> dict:
    """Write the references, the three prompt files, ``source.json`` and a README into the new folder ``output``;
    for a suite (``suite_record``: rvcbench's ``suite_record`` fields) also rvcbench's ``suite.json``."""
    output = Path(output)
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise ClonebenchError(f"{output} exists and is not an empty folder; choose a new --output folder")
    entries = []
    for pair_set in pair_sets:
        for sample, entry in zip(pair_set.samples, prompt_entries(pair_set)):
            data = verified_bytes(sample.prompt, f"{entry['id']} reference")
            atomic_write_bytes(output / entry["reference_audio"], data)
            entries.append(entry)
    ids = [e["id"] for e in entries]
    if len(set(ids)) != len(ids):
        raise ClonebenchError(f"the pair sets repeat output ids ({sorted({i for i in ids if ids.count(i) > 1})[:5]})")
    lists = {name: batch_list(entries, output, sep, name) for name, sep in BATCH_LISTS.items()}
    atomic_write_text(output / "prompts.jsonl", "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries))
    for name, text in lists.items():
        atomic_write_text(output / name, text)
    atomic_write_json(output / "source.json", {"schema": "clonebench.prompts/v1", "prompts": len(entries),
                                               "pair_sets": [p.origin for p in pair_sets]})
    if suite_record is not None:  # as rvcbench's export_prompts: the suite record, its generated tasks, the count
        atomic_write_json(output / "suite.json", {**suite_record, "tasks": [p.task for p in pair_sets],
                                                  "prompts": len(entries)})
    sources = "; ".join(f"{_source(p.origin)} (task {p.task}, {len(p.samples)} pairs)" for p in pair_sets)
    atomic_write_text(output / "README.md", README.format(pairs=len(entries), sources=sources, source_args=source_args))
    return {"prompts": len(entries), "output": str(output.resolve()), "tasks": [p.task for p in pair_sets]}
