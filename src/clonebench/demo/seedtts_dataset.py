"""A small synthetic benchmark in Seed-TTS-eval's layout, for the demo and the tests (not the real test sets).

``<root>/en/meta.lst`` (test-en's shape: LibriVox clips of Debian's pocketsphinx-testdata as prompts, with their
transcripts; English sentences to say), ``<root>/zh/meta.lst`` (test-zh's: eSpeak NG Mandarin prompts; Mandarin
sentences, each with an eSpeak "ground truth" as the fifth field) and ``<root>/zh/hardcase.lst`` (test-hard's:
tongue twisters and repeated words). Paths in the lists are relative to each list, as the benchmark's are.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import soundfile as sf

from clonebench.core.atomic import atomic_write_bytes, atomic_write_text
from clonebench.standin.voice import espeak

RATE = 16_000
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")  # Debian pocketsphinx-testdata
EN_TEXTS = ["The birch canoe slid on the smooth planks.", "Glue the sheet to the dark blue background.",
            "It's easy to tell the depth of a well.", "These days a chicken leg is a rare dish."]
ZH_PROMPTS = ["今天天气很好，我们去公园散步吧。", "他每天早上七点起床，然后去上班。", "这本书写得非常有意思。"]
ZH_TEXTS = ["我们明天早上八点在学校门口见面。", "请把窗户打开，让新鲜空气进来。", "这家饭馆的菜又便宜又好吃。"]
HARD_TEXTS = ["四是四，十是十，十四是十四，四十是四十。", "吃葡萄不吐葡萄皮，不吃葡萄倒吐葡萄皮。",
              "好好好好好，我知道了，好好好。"]


ZH_VOICES = [(25, 150), (75, 175), (50, 135)]  # eSpeak pitch and words per minute: one voice per prompt speaker


def _wav(text: str, voice: str, path: Path, pitch: int = 50, speed: int = 160) -> str:
    out = io.BytesIO()
    sf.write(out, espeak(text, voice, pitch, speed, RATE), RATE, subtype="PCM_16", format="WAV")
    atomic_write_bytes(path, out.getvalue())
    return path.name


def librivox_prompts(folder: Path = LIBRIVOX) -> list[tuple[Path, str]]:
    """(clip, transcript) of the LibriVox test clips, in file order."""
    listing = (folder / "transcription").read_text(encoding="utf-8").splitlines()
    texts = {}
    for line in listing:
        text, _, utt = line.rpartition("(")
        texts[utt.strip(" )")] = text.replace("<s>", "").replace("</s>", "").strip()
    return [(folder / f"{utt}.wav", text) for utt, text in sorted(texts.items()) if (folder / f"{utt}.wav").is_file()]


def build_seedtts_benchmark(root: Path, prompts: Path = LIBRIVOX) -> dict[str, Path]:
    """Write the three lists and their audio under ``root``; test set name -> list path."""
    root = Path(root)
    lines = []
    for k, ((clip, transcript), text) in enumerate(zip(librivox_prompts(prompts), EN_TEXTS)):
        (root / "en" / "prompt-wavs").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(clip, root / "en" / "prompt-wavs" / clip.name)
        lines.append(f"en-{k:03d}|{transcript.capitalize()}.|prompt-wavs/{clip.name}|{text}")
    atomic_write_text(root / "en" / "meta.lst", "\n".join(lines) + "\n")
    zh, hard = [], []
    for k, (prompt, text) in enumerate(zip(ZH_PROMPTS, ZH_TEXTS)):
        pitch, speed = ZH_VOICES[k % len(ZH_VOICES)]
        name = _wav(prompt, "cmn", root / "zh" / "prompt-wavs" / f"zh-prompt-{k:03d}.wav", pitch, speed)
        truth = _wav(text, "cmn", root / "zh" / "wavs" / f"zh-{k:03d}.wav", pitch, speed)
        zh.append(f"zh-{k:03d}|{prompt}|prompt-wavs/{name}|{text}|wavs/{truth}")
        hard.append(f"hard-{k:03d}|{prompt}|prompt-wavs/{name}|{HARD_TEXTS[k]}")
    atomic_write_text(root / "zh" / "meta.lst", "\n".join(zh) + "\n")
    atomic_write_text(root / "zh" / "hardcase.lst", "\n".join(hard) + "\n")
    return {"test-en": root / "en" / "meta.lst", "test-zh": root / "zh" / "meta.lst",
            "test-hard": root / "zh" / "hardcase.lst"}
