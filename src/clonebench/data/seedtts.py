"""Seed-TTS-eval meta lists (``meta.lst``, ``hardcase.lst``, any list in that format) read as pair manifests.

One line per utterance, fields joined by ``|`` (BytedanceSpeech/seed-tts-eval's ``get_wav_res_ref_text.py``):
``utt|prompt_text|prompt_wav|infer_text`` and, where the benchmark has one, ``|infer_wav`` (the ground-truth
recording of ``infer_text``). Paths are relative to the list's folder. Each line becomes one pair:

- ``pair_id`` = ``utt`` (the output file is ``<utt>.wav``, as the benchmark's scripts look for it);
- the prompt = ``prompt_wav`` with ``prompt_text``; the text to say = ``infer_text``;
- the target recording = ``infer_wav``, or the prompt when the line has none (the benchmark's SIM compares with
  the prompt, "SIM-o", and its WER with the text: the target is then only a placeholder, never a hidden answer);
- ``speaker_id`` = the prompt file's name (the benchmark has no speaker ids; one prompt, one speaker);
- the language: the list's folder (``en``/``zh``, the benchmark's layout), else ``zh`` for a text holding CJK and
  ``en`` otherwise; ``dataset_name`` names the test set as papers do: ``test-en`` (en/meta.lst), ``test-zh``
  (zh/meta.lst), ``test-hard`` (zh/hardcase.lst), else ``seedtts-<folder>-<list name>``.

The list's lines that are not 4 or 5 fields (the benchmark's voice-conversion and editing lists) are refused, each
named by its line, before anything is read or sent.
"""

from __future__ import annotations

import re
from pathlib import Path

from clonebench.core.errors import ManifestError

TEST_SETS = {("en", "meta"): "test-en", ("zh", "meta"): "test-zh", ("zh", "hardcase"): "test-hard"}
LANGUAGES = ("en", "zh")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def is_meta_list(path: Path) -> bool:
    return Path(path).suffix.lower() == ".lst"


def benchmark_set(path: Path) -> str:
    folder, stem = path.parent.name.lower(), path.stem.lower()
    return TEST_SETS.get((folder, stem)) or _UNSAFE.sub("-", f"seedtts-{folder}-{stem}").strip("-.")


def _language(path: Path, text: str) -> str:
    folder = path.parent.name.lower()
    if folder in LANGUAGES:
        return folder
    return "zh" if _CJK.search(text) else "en"


def meta_rows(text: str, path: Path) -> list[dict]:
    """Manifest rows (``data/manifest.py``'s fields) of a meta list's ``text``; a ManifestError listing every bad
    line."""
    path = Path(path)
    name, rows, problems = benchmark_set(path), [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.strip().split("|")
        if len(fields) not in (4, 5):
            problems.append(f"{path} line {number}: {len(fields)} '|'-separated fields; a zero-shot TTS meta list "
                            "line is utt|prompt_text|prompt_wav|infer_text[|infer_wav] (the benchmark's voice "
                            "conversion and editing lists are not pair lists)")
            continue
        utt, prompt_text, prompt_wav, infer_text = (f.strip() for f in fields[:4])
        infer_wav = fields[4].strip() if len(fields) == 5 else ""
        language = _language(path, infer_text)
        rows.append({"dataset_name": name, "split": path.stem, "pair_id": utt,
                     "speaker_id": Path(prompt_wav).stem or utt, "prompt_file_name": prompt_wav,
                     "target_file_name": infer_wav or prompt_wav, "prompt_text": prompt_text,
                     "target_text": infer_text, "prompt_language": _language(path, prompt_text) if
                     path.parent.name.lower() not in LANGUAGES else language, "target_language": language,
                     "source_index": number - 1, "manifest_variant": "speaker", "source_manifest": path.name,
                     "source_row": number})
    if problems:
        raise ManifestError(str(path), problems)
    return rows
