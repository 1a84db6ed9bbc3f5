"""Build a small LibriTTS-shaped dataset with eSpeak NG voices as speakers.

Layout: ``<root>/audios/<speaker>/<speaker>_<utt>.wav`` (24 kHz PCM16, like LibriTTS) and
``<root>/metadata.json`` in the project's pair schema with sha256 of every file. eSpeak NG is
deterministic for a given version, so the same version rebuilds byte-identical files.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import soundfile as sf

from clonebench.core.atomic import atomic_write_bytes, atomic_write_json
from clonebench.core.hashing import sha256_bytes
from clonebench.standin.voice import espeak

RATE = 24_000
# the stand-in's failure behaviours in ``scripts/demo.py --failing`` (clonebench.standin.behaviours): a quarter of
# the pairs each loop, stop short, or get the prompt back, picked by a hash of the pair
FAILING_BEHAVIOURS = "loop=0.25,truncate=0.25,prompt_copy=0.25"
SPEAKERS = {  # speaker id -> (eSpeak voice, pitch 0-99, words per minute)
    "1001": ("en-us+m3", 30, 150),
    "1002": ("en-us+f3", 75, 175),
    "1003": ("en+m1", 45, 135),
    "1004": ("en-us+f2", 60, 190),
}
SENTENCES = [
    "The birch canoe slid on the smooth planks.",
    "Glue the sheet to the dark blue background.",
    "It is easy to tell the depth of a well.",
    "These days a chicken leg is a rare dish.",
    "Rice is often served in round bowls.",
    "The juice of lemons makes fine punch.",
    "The box was thrown beside the parked truck.",
    "The hogs were fed chopped corn and garbage.",
    "Four hours of steady work faced us.",
    "A large size in stockings is hard to sell.",
    "The boy was there when the sun rose.",
    "A rod is used to catch pink salmon.",
    "The source of the huge river is the clear spring.",
    "Kick the ball straight and follow through.",
    "Help the woman get back to her feet.",
    "A pot of tea helps to pass the evening.",
]


def _wav(text: str, voice: str, pitch: int, speed: int) -> bytes:
    out = io.BytesIO()
    sf.write(out, espeak(text, voice, pitch, speed, RATE), RATE, subtype="PCM_16", format="WAV")
    return out.getvalue()


def scale_manifest(manifest: Path, pairs: int) -> Path:
    """A manifest of ``pairs`` rows reusing a built dataset's files (for load, memory and resume benchmarks)."""
    base = json.loads(Path(manifest).read_text())["pairs"]
    rows = []
    for index in range(pairs):
        row = dict(base[index % len(base)])
        row.update(pair_id=f"{row['pair_id']}-x{index:05d}", source_row=index, source_index=index)
        rows.append(row)
    out = Path(manifest).with_name(f"metadata_{pairs}.json")
    atomic_write_json(out, {"schema": "clonebench.pairs/v1", "subset": f"espeak_demo_x{pairs}", "pairs": rows})
    return out


def build_demo_dataset(root: Path, pairs_per_speaker: int = 2) -> Path:
    """Write the audio and ``metadata.json`` under ``root``; returns the manifest path."""
    root = Path(root)
    rows, sentence = [], 0
    for speaker_number, (speaker, (voice, pitch, speed)) in enumerate(SPEAKERS.items()):
        for k in range(pairs_per_speaker):
            prompt_text = SENTENCES[sentence % len(SENTENCES)]
            target_text = SENTENCES[(sentence + 1) % len(SENTENCES)]
            sentence += 2
            files = {}
            for role, text in (("prompt", prompt_text), ("target", target_text)):
                name = f"audios/{speaker}/{speaker}_{k:03d}_{role}.wav"
                data = _wav(text, voice, pitch, speed)
                atomic_write_bytes(root / name, data)
                files[role] = (name, sha256_bytes(data))
            rows.append({
                "dataset_name": "espeak_demo", "split": "default", "pair_id": f"demo-{speaker}-{k:06d}",
                "speaker_id": speaker, "manifest_variant": "speaker", "source_manifest": f"{speaker}.json",
                "source_row": k, "source_index": speaker_number * 10 + k,
                "prompt_file_name": files["prompt"][0], "target_file_name": files["target"][0],
                "prompt_text": prompt_text, "target_text": target_text,
                "prompt_language": "EN", "target_language": "EN",
                "prompt_sha256": files["prompt"][1], "target_sha256": files["target"][1],
            })
    manifest = root / "metadata.json"
    atomic_write_json(manifest, {"schema": "clonebench.pairs/v1", "subset": "espeak_demo",
                                 "description": "eSpeak NG voices as speakers; synthetic, for the offline demo and tests",
                                 "pairs": rows})
    return manifest
