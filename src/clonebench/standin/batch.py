"""The stand-in as a batch script, the way model repositories run inference over a prompt list (test/demo only).

    python -m clonebench.standin --test-list prompts/prompts.tsv --res-dir outputs/standin [--seed 1]

Like ZipVoice's ``infer_zipvoice --test-list ... --res-dir ...``: each line of a ``prompts.tsv``
(``id<TAB>reference_text<TAB>reference_wav<TAB>text``; a Seed-TTS ``.lst`` with ``|`` also works) becomes
``<res-dir>/<id>.wav``. The voice is the stand-in server's (eSpeak NG, pitch and rate following the reference;
not a cloning model). As a sampling model does, the seed varies each utterance's prosody a little (pitch by up
to ±4 steps, rate by about ±5 %, drawn from the seed and the id), so runs with different seeds differ and
runs with the same seed are byte-identical. ``--ignore-reference`` speaks every line in one default voice (a
system that does not clone).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from clonebench.core.atomic import atomic_write_bytes
from clonebench.standin.voice import DEFAULT_STYLE, reference_style, synthesize

SEPARATORS = {".tsv": "\t", ".lst": "|"}


def read_list(path: Path) -> list[tuple[str, str, Path, str]]:
    """(id, reference_text, reference_wav, text) per line of a ZipVoice tsv or Seed-TTS lst."""
    separator = SEPARATORS.get(Path(path).suffix)
    if separator is None:
        raise SystemExit(f"{path}: expected a .tsv (ZipVoice) or .lst (Seed-TTS) prompt list")
    out = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split(separator)
        if len(fields) != 4:
            raise SystemExit(f"{path} line {number}: {len(fields)} fields, expected id, reference_text, "
                             "reference_wav, text")
        out.append((fields[0], fields[1], Path(fields[2]), fields[3]))
    return out


def utterance_seed(seed: int, utterance_id: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{utterance_id}".encode()).digest()[:8], "little")


def jittered(style: dict, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    out = dict(style)
    out["pitch"] = int(np.clip(style["pitch"] + rng.integers(-4, 5), 0, 99))
    out["speed"] = int(np.clip(round(style["speed"] * (1.0 + rng.uniform(-0.05, 0.05))), 80, 450))
    return out


def run_batch(test_list: Path, res_dir: Path, seed: int = 0, ignore_reference: bool = False,
              language: str = "en") -> int:
    res_dir = Path(res_dir)
    res_dir.mkdir(parents=True, exist_ok=True)
    lines = read_list(test_list)
    for utterance_id, reference_text, reference_wav, text in lines:
        style = dict(DEFAULT_STYLE) if ignore_reference else reference_style(reference_wav.read_bytes(), reference_text)
        own_seed = utterance_seed(seed, utterance_id)
        atomic_write_bytes(res_dir / f"{utterance_id}.wav", synthesize(text, language, jittered(style, own_seed),
                                                                       own_seed % 2**32))
    print(f"stand-in (eSpeak NG, not a cloning model): wrote {len(lines)} WAV files to {res_dir}")
    return 0
