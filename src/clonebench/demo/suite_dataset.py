"""A synthetic stand-in for an RVCBench suite's dataset, in the real layout, for tests and benchmarks.

``build_suite_standin(name, out, tasks)`` writes

- ``<out>/dataset/<hf_config_name>/<file name>`` (and, for ``"paths": "repo"`` tasks, ``<out>/dataset/<file name>``):
  one recording per file the selected tasks name, in the container its name says (MP3 for CommonVoice French):
  eSpeak NG speaking the row's transcript in the row's language (``speech="espeak"``, a voice per speaker), or
  a tiny deterministic tone (``speech="tiny"``: benchmarks at full-v1's size);
- ``<out>/suite/<suite folder>/``: the suite's files, byte for byte, except that each built task's selection file
  has every sample's ``prompt_sha256``/``target_sha256`` rewritten to the synthetic files' hashes and its
  ``input_fingerprint`` recomputed (sample ids, source indices and, with every=1, the metadata file are untouched, so the
  synthetic suite selects exactly the upstream pairs). Tasks not built keep the upstream selection, whose hashes
  the synthetic data does not match.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from pathlib import Path

import numpy as np
import soundfile as sf

from clonebench.core.atomic import atomic_write_bytes
from clonebench.core.hashing import sha256_bytes
from clonebench.data.audio import input_container
from clonebench.data.identity import digest
from clonebench.suite.definition import Suite, load_suite
from clonebench.suite.rows import task_rows

RATE = 16_000
VOICES = {"EN": "en-us", "ZH": "cmn", "FR": "fr"}
VARIANTS = ("m1", "m3", "f2", "f3", "m2", "f1")
FORMATS = {"WAV": ("WAV", "PCM_16"), "MP3": ("MP3", "MPEG_LAYER_III"), "FLAC": ("FLAC", "PCM_16"),
           "OGG": ("OGG", "VORBIS")}


def _encode(audio: np.ndarray, name: str) -> bytes:
    container, subtype = FORMATS[input_container(name)]
    out = io.BytesIO()
    sf.write(out, audio, RATE, format=container, subtype=subtype)
    return out.getvalue()


def _seed(*parts: str) -> int:
    return int(hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:8], 16)


def _tiny(name: str) -> np.ndarray:
    """0.25 s: a tone whose pitch depends on the file name, plus seeded noise (unique bytes per file)."""
    seed = _seed(name)
    t = np.arange(int(0.25 * RATE)) / RATE
    tone = 0.2 * np.sin(2 * np.pi * (110 + seed % 300) * t)
    return (tone + np.random.default_rng(seed).normal(0, 0.01, t.shape)).astype(np.float32)


def _spoken(text: str, language: str, speaker: str) -> np.ndarray:
    from clonebench.standin.voice import espeak

    seed = _seed(speaker)
    voice = f"{VOICES.get(language.upper(), 'en-us')}+{VARIANTS[seed % len(VARIANTS)]}"
    words = " ".join(text.split()[:40])  # long-form transcripts are cut: a stand-in clip needs no minutes of audio
    return espeak(words or "silence", voice, 25 + seed % 60, 150 + seed % 40, RATE)


def _files(suite: Suite, names: list[str], every: int) -> dict[str, tuple[str, str, str, str]]:
    """Every file the tasks name: path under the dataset root -> (text, language, speaker, task)."""
    wanted: dict[str, tuple[str, str, str, str]] = {}
    for name in names:
        task = suite.task(name)
        prefix = "" if task.repo_paths else f"{task.hf_config_name}/"
        for row in task_rows(suite, task).rows[::every]:
            for role in ("prompt", "target"):
                wanted.setdefault(prefix + row[f"{role}_file_name"],
                                  (row[f"{role}_text"], row[f"{role}_language"], row["speaker_id"], name))
    return wanted


def _gz(data: bytes, name: str) -> bytes:
    return gzip.compress(data, mtime=0) if name.endswith(".gz") else data


def _rewrite(suite: Suite, name: str, hashes: dict[str, str], every: int) -> tuple[bytes, bytes]:
    """The task's metadata (every ``every``-th row) and its selection with the synthetic files' hashes."""
    task = suite.task(name)
    rows = task_rows(suite, task)
    prefix = "" if task.repo_paths else f"{task.hf_config_name}/"
    metadata = suite.file_bytes(task.manifest)
    if every > 1:
        metadata = _gz(json.dumps(suite.read(task.manifest)[::every], indent=2, ensure_ascii=False).encode("utf-8"),
                       task.manifest)
    selection = suite.read(task.selection)
    selection["samples"] = selection["samples"][::every]
    selection.update(requested=len(selection["samples"]), metadata_sha256=sha256_bytes(metadata))
    by_pair = {row["pair_id"]: row for row in rows.rows}
    records = []
    for sample in selection["samples"]:
        row = by_pair[sample["pair_id"]]
        sample["prompt_sha256"] = hashes[prefix + row["prompt_file_name"]]
        sample["target_sha256"] = hashes[prefix + row["target_file_name"]]
        records.append({k: sample[k] for k in ("sample_id", "prompt_sha256", "target_sha256", "prompt_text",
                                              "target_text", "prompt_language", "target_language", "source_index")})
    selection["input_fingerprint"] = digest(records)
    return metadata, _gz(json.dumps(selection, indent=2, ensure_ascii=False).encode("utf-8"), task.selection)


def build_suite_standin(name: str, out: Path, tasks: list[str] | None = None, speech: str = "espeak",
                        every: int = 1) -> Path:
    """Write the synthetic dataset and suite copy under ``out``; returns the suite folder (pass it as suite.name).

    ``every`` > 1 keeps every ``every``-th pair of each built task (a smaller suite of the same shape, for the
    scale benchmark); the kept pairs keep their upstream ids."""
    out = Path(out)
    suite = load_suite(name)
    chosen = [t.name for t in (load_suite(name, tasks).tasks if tasks else suite.tasks) if not t.derived]
    hashes: dict[str, str] = {}
    for path, (text, language, speaker, _) in sorted(_files(suite, chosen, every).items()):
        audio = _tiny(path) if speech == "tiny" else _spoken(text, language, speaker)
        data = _encode(audio, path)
        target = out / "dataset" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)  # synthetic inputs, rebuilt at will: no fsync per file (full-v1 has 20,626)
        hashes[path] = sha256_bytes(data)
    folder = out / "suite" / Path(suite.folder).name
    atomic_write_bytes(folder / "suite.json", suite.file_bytes("suite.json"))
    for task in suite.tasks:
        if task.derived:
            continue
        metadata, selection = (_rewrite(suite, task.name, hashes, every) if task.name in chosen else
                               (suite.file_bytes(task.manifest), suite.file_bytes(task.selection)))
        atomic_write_bytes(folder / task.manifest, metadata)
        atomic_write_bytes(folder / task.selection, selection)
    return folder
