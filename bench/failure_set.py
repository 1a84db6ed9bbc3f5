"""A labelled evaluation set for the failure flags (docs/failure-modes.md), built by script and deterministic.

Real read speech (Debian pocketsphinx-testdata's LibriVox clips, with their transcripts) and eSpeak NG voices in
several English accents and other languages; every failure class in several variants, and many good clips:

- ``good``: eSpeak English accents (US, GB, Scotland, RP, Caribbean, Lancaster, West Midlands, New York), slow
  (115-130 wpm) and fast (220-240 wpm) voices against a prompt at 165 wpm, pauses between words and phrases, quiet
  (-35 dBFS) and noisy (white noise at 12 dB SNR) copies, LibriVox clips, French, German, Spanish and Italian;
- ``babble`` (speech-like sound that does not say the text): reversed, shuffled in 120-250 ms pieces, English
  nonsense syllables, nonsense syllables in another language's voice;
- ``truncated``: a good clip cut at 20-70 % of its duration (slow and fast voices included);
- ``overlong``: the text, then further unrelated sentences;
- ``looping``: the start of the text repeated 3-5 times, as exact copies, resampled per repeat (speed and pitch
  +-3 %) or re-synthesised per repeat (eSpeak speed +-5 %, pitch 35-65);
- ``wrong_language``: the text's meaning in French (three accents), German, Spanish (two), Italian, Portuguese,
  Russian (Cyrillic), Mandarin (Han), Hindi (Devanagari); and English audio for a French text;
- ``silent``, ``mostly_silent``, ``clipping``, ``prompt_copy``.

Each clip has a prompt (the same voice saying PROMPT_TEXT at 165 wpm, or another LibriVox clip) and a target text.
The split is fixed: within each class, the clips in build order alternate dev / held-out (``split``), so both
halves cover every variant kind; thresholds are tuned on ``dev`` only, and ``heldout`` is what the docs report.
``build_set(folder)`` writes the WAVs, a clonebench pair manifest and a folder of generated clips named by id
(what ``clonebench score --manifest ... --generated ...`` reads) and ``labels.json``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
from scipy.signal import resample_poly

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))

from tests.crafted_failures import espeak_wav  # noqa: E402  (eSpeak NG at 16 kHz, edges trimmed)

RATE = 16_000
TASK = "failset"
CLASSES = ("good", "silent", "mostly_silent", "truncated", "overlong", "looping", "babble", "wrong_language",
           "clipping", "prompt_copy")
PROMPT_TEXT = "Please remember to water the tomato plants every evening before the sun goes down."
EN_TEXTS = (
    "After dinner we sat on the porch and listened to the rain falling on the roof.",
    "The old bridge across the river was closed for repairs during the whole summer.",
    "She packed her bags quickly and caught the last train to the coast that night.",
    "Our neighbours grow beautiful roses in the small garden behind their house.",
    "The teacher asked every student to read a short story aloud in front of the class.",
    "We walked along the beach until the lighthouse disappeared behind the hills.",
    "My brother fixed the broken bicycle with a few tools he found in the garage.",
    "The museum opens early on Sundays, so we should leave home before nine.",
    "A warm wind blew through the valley and the farmers started to cut the hay.",
    "He forgot his umbrella at the office and walked home through the heavy storm.",
)
FOREIGN = {  # language -> (voices, text: the first English text's meaning); the good clips use the first voice
    "fr": (("fr-fr", "fr-be", "fr-ch"), "Après le dîner, nous nous sommes assis sous le porche et nous avons écouté "
           "la pluie tomber sur le toit."),
    "de": (("de",), "Nach dem Abendessen saßen wir auf der Veranda und hörten dem Regen auf dem Dach zu."),
    "es": (("es", "es-419"), "Después de cenar nos sentamos en el porche y escuchamos la lluvia caer sobre el "
           "tejado."),
    "it": (("it",), "Dopo cena ci siamo seduti sotto il portico e abbiamo ascoltato la pioggia cadere sul tetto."),
    "pt": (("pt-br",), "Depois do jantar sentamos na varanda e ouvimos a chuva caindo no telhado."),
    "ru": (("ru",), "После ужина мы сидели на крыльце и слушали, как дождь стучит по крыше."),
    "zh": (("cmn",), "晚饭后我们坐在门廊上，听着雨水落在屋顶上的声音。"),
    "hi": (("hi",), "रात के खाने के बाद हम बरामदे पर बैठे और छत पर गिरती बारिश की आवाज़ सुनी।"),
}
PROMPTS = {"fr": "N'oubliez pas d'arroser les tomates tous les soirs avant le coucher du soleil.",
           "de": "Vergiss nicht, die Tomaten jeden Abend vor Sonnenuntergang zu gießen.",
           "es": "No olvides regar las tomateras todas las tardes antes de que se ponga el sol.",
           "it": "Ricordati di innaffiare i pomodori ogni sera prima del tramonto."}
EN_VOICES = ("en-us", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-029", "en-gb-x-gbclan", "en-gb-x-gbcwmd",
             "en-us-nyc")
VARIANTS = ("m1", "f2", "m3", "f4", "m7", "f1", "m2", "f3")
NORMAL = 165
SYLLABLES = [c + v for c in "bdgklmnprstvz" for v in ("a", "e", "i", "o", "u")]


@dataclass(frozen=True)
class Clip:
    id: str
    cls: str            # "good" or the flag this clip must raise
    variant: str        # how it was made
    split: str          # "dev" or "heldout"
    text: str           # the target text
    language: str
    prompt: str         # file name of its prompt under prompts/
    prompt_text: str
    prompt_language: str


def _write(path: Path, audio: np.ndarray) -> None:
    """Through a temporary file: a scoring run reading the folder never sees a half-written clip."""
    part = path.with_name(path.name + ".part")
    sf.write(str(part), np.clip(audio, -1.0, 1.0), RATE, subtype="PCM_16", format="WAV")
    part.replace(path)


def _rms(audio: np.ndarray) -> float:
    return float(np.sqrt(np.mean(audio ** 2))) or 1e-9


def _gap(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * RATE))


def _fade(audio: np.ndarray, ms: float = 10) -> np.ndarray:
    out, n = audio.copy(), min(len(audio) // 2, int(ms / 1000 * RATE))
    if n:
        out[:n] *= np.linspace(0, 1, n)
        out[-n:] *= np.linspace(1, 0, n)
    return out


def played_faster(audio: np.ndarray, factor: float) -> np.ndarray:
    """Played ``factor`` times faster (tempo and pitch together), by polyphase resampling."""
    up = 1000
    return resample_poly(audio, up, int(round(up * factor)))


def _nonsense(rng: np.random.Generator, words: int) -> str:
    return " ".join("".join(rng.choice(SYLLABLES, size=rng.integers(2, 4))) for _ in range(words))


def shuffled(audio: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    pieces, at = [], 0
    while at < len(audio):
        n = int(rng.uniform(0.12, 0.25) * RATE)
        pieces.append(_fade(audio[at:at + n], 5))
        at += n
    return np.concatenate([pieces[i] for i in rng.permutation(len(pieces))])


def _librivox() -> list[tuple[Path, str]]:
    from tests.crafted_failures import librivox_clips

    return librivox_clips()


def read_16k(path: Path) -> np.ndarray:
    audio, rate = sf.read(str(path), dtype="float64", always_2d=True)
    audio = audio.mean(axis=1)
    return audio if rate == RATE else resample_poly(audio, RATE, rate)


class _Builder:
    def __init__(self, folder: Path):
        self.folder = folder
        self.clips: list[Clip] = []
        self.audio: dict[str, np.ndarray] = {}
        self.prompts: dict[str, np.ndarray] = {}
        self.counts: dict[str, int] = {}
        self.kinds: dict[tuple[str, str], int] = {}

    def prompt(self, voice: str, language: str) -> tuple[str, str]:
        name = f"{voice.replace('+', '_')}.wav"
        text = PROMPT_TEXT if language == "en" else PROMPTS[language]
        if name not in self.prompts:
            self.prompts[name] = espeak_wav(text, voice, NORMAL)
        return name, text

    def add(self, cls: str, variant: str, audio: np.ndarray, text: str, language: str, prompt: tuple[str, str],
            prompt_language: str | None = None) -> None:
        """``variant`` is ``kind`` or ``kind:detail``: the clips of one class and kind alternate dev / held-out."""
        n = self.counts.get(cls, 0)
        self.counts[cls] = n + 1
        kind = variant.split(":")[0]
        k = self.kinds.get((cls, kind), 0)
        self.kinds[(cls, kind)] = k + 1
        clip_id = f"{cls}-{n:02d}-{variant.replace(':', '-')}"
        self.clips.append(Clip(clip_id, cls, kind, "heldout" if k % 2 else "dev", text, language, prompt[0],
                               prompt[1], prompt_language or language))
        self.audio[clip_id] = audio


def _good(b: _Builder, libri: list[tuple[Path, str]]) -> None:
    for i, voice in enumerate(EN_VOICES):
        for j, (speed, how) in enumerate(((NORMAL, "normal"), (118 + 4 * i, "slow"), (220 + 3 * i, "fast"))):
            v = f"{voice}+{VARIANTS[(i + j) % len(VARIANTS)]}"
            text = EN_TEXTS[(i * 3 + j) % len(EN_TEXTS)]
            b.add("good", f"{how}:{voice}", espeak_wav(text, v, speed), text, "en", b.prompt(v, "en"))
    for i, voice in enumerate(EN_VOICES[:4]):  # pauses: eSpeak's word gap, and a pause between two phrases
        v, text = f"{voice}+{VARIANTS[i]}", EN_TEXTS[(i + 5) % len(EN_TEXTS)]
        words = text.split()
        half = len(words) // 2
        audio = np.concatenate([espeak_wav(" ".join(words[:half]), v, NORMAL), _gap(0.7),
                                espeak_wav(" ".join(words[half:]), v, NORMAL)]) if i % 2 else \
            espeak_with(text, v, NORMAL, "-g", "15")
        b.add("good", f"pauses:{voice}", audio, text, "en", b.prompt(v, "en"))
    for i, voice in enumerate(EN_VOICES[4:]):  # quiet and noisy
        v, text = f"{voice}+{VARIANTS[i + 4]}", EN_TEXTS[(i + 7) % len(EN_TEXTS)]
        clean = espeak_wav(text, v, NORMAL)
        b.add("good", f"quiet:{voice}", clean * (10 ** (-35 / 20) / _rms(clean)), text, "en", b.prompt(v, "en"))
        noise = np.random.default_rng(100 + i).standard_normal(len(clean))
        noisy = clean + noise * _rms(clean) / _rms(noise) * 10 ** (-12 / 20)
        b.add("good", f"noisy:{voice}", noisy * 0.5 / np.abs(noisy).max(), text, "en", b.prompt(v, "en"))
    for i, (wav, text) in enumerate(libri):
        prompt_wav, prompt_text = libri[(i + 1) % len(libri)]
        name = f"librivox-{prompt_wav.stem[-4:]}.wav"
        b.prompts.setdefault(name, read_16k(prompt_wav))
        audio = read_16k(wav)
        b.add("good", "librivox", audio, text, "en", (name, prompt_text))
        if i < 2:
            noise = np.random.default_rng(200 + i).standard_normal(len(audio))
            b.add("good", "librivox-noisy", audio + noise * _rms(audio) / _rms(noise) * 10 ** (-15 / 20), text,
                  "en", (name, prompt_text))
    for language in ("fr", "de", "es", "it"):
        voice, text = FOREIGN[language][0][0], FOREIGN[language][1]
        for k, speed in enumerate((NORMAL, 140)):
            v = f"{voice}+{VARIANTS[k + 2]}"
            b.add("good", f"foreign:{language}-{speed}", espeak_wav(text, v, speed), text, language,
                  b.prompt(v, language))


def _failures(b: _Builder, libri: list[tuple[Path, str]]) -> None:
    rng = np.random.default_rng(40)
    en = lambda i: (f"{EN_VOICES[i % 8]}+{VARIANTS[(i * 3) % 8]}", EN_TEXTS[i % len(EN_TEXTS)])  # noqa: E731
    # babble: reversed, shuffled, nonsense syllables (English voice), nonsense in another language's voice
    for i in range(4):
        v, text = en(i)
        b.add("babble", "reversed", espeak_wav(text, v, NORMAL)[::-1], text, "en", b.prompt(v, "en"))
        v, text = en(i + 4)
        b.add("babble", "shuffled", shuffled(espeak_wav(text, v, NORMAL), rng), text, "en", b.prompt(v, "en"))
        v, text = en(i + 2)
        b.add("babble", "nonsense", espeak_wav(_nonsense(rng, len(text.split())), v, NORMAL), text, "en",
              b.prompt(v, "en"))
        v, text = en(i + 6)
        other = ("de", "it", "es", "fr-fr")[i]
        b.add("babble", f"nonsense-foreign:{other}", espeak_wav(_nonsense(rng, len(text.split())), other, NORMAL), text,
              "en", b.prompt(v, "en"))
    for i, (wav, text) in enumerate(libri[:2]):
        prompt_wav, prompt_text = libri[(i + 1) % len(libri)]
        name = f"librivox-{prompt_wav.stem[-4:]}.wav"
        b.prompts.setdefault(name, read_16k(prompt_wav))
        b.add("babble", "librivox-reversed", read_16k(wav)[::-1], text, "en", (name, prompt_text))
        b.add("babble", "librivox-shuffled", shuffled(read_16k(wav), rng), text, "en", (name, prompt_text))
    # truncated at 20-70 %, normal, slow and fast voices
    # per speed, the dev and the held-out halves each get a short and a long cut
    for i, cut in enumerate((0.2, 0.5, 0.35, 0.3, 0.4, 0.55, 0.6, 0.25, 0.7, 0.7, 0.65, 0.5)):
        v, text = en(i + 1)
        speed = (NORMAL, 120, 230)[i % 3]
        audio = espeak_wav(text, v, speed)
        b.add("truncated", f"{speed}wpm:cut{int(cut * 100)}", _fade(audio[:int(cut * len(audio))]), text, "en",
              b.prompt(v, "en"))
    # overlong: the text, then more speech
    for i in range(8):
        v, text = en(i + 3)
        extra = " ".join(EN_TEXTS[(i + 4 + k) % len(EN_TEXTS)] for k in range(1 + i % 2))
        audio = np.concatenate([espeak_wav(text, v, NORMAL), _gap(0.3), espeak_wav(extra, v, NORMAL)])
        b.add("overlong", f"continues{1 + i % 2}", audio, text, "en", b.prompt(v, "en"))
    # looping: the first 4-7 words repeated 3-5 times
    for i in range(12):
        v, text = en(i + 5)
        words = text.split()
        phrase, times = " ".join(words[:4 + i % 4]), 3 + i % 3
        kind = ("exact", "resampled", "resynth")[i % 3]
        if kind == "exact":
            one = espeak_wav(phrase, v, NORMAL)
            parts = [one] * times
        elif kind == "resampled":
            one = espeak_wav(phrase, v, NORMAL)
            parts = [played_faster(one, 1 + rng.uniform(-0.03, 0.03)) for _ in range(times)]
        else:
            parts = [espeak_with(phrase, v, int(NORMAL * rng.uniform(0.95, 1.05)), "-p", str(rng.integers(35, 66)))
                     for _ in range(times)]
        audio = np.concatenate([np.concatenate([p, _gap(0.15)]) for p in parts])
        b.add("looping", f"{kind}:x{times}", audio, text, "en", b.prompt(v, "en"))
    # wrong language: the first English text's meaning in other languages and accents; English for a French text
    k = 0
    for language, (voices, foreign) in FOREIGN.items():
        for voice in voices:
            v, _ = en(k)
            k += 1
            accent = f"{voice}+{VARIANTS[(k + 4) % len(VARIANTS)]}"  # fr-fr ignores variants: good-43's audio
            b.add("wrong_language", f"other-for-en:{voice}", espeak_wav(foreign, accent, NORMAL), EN_TEXTS[0],
                  "en", b.prompt(v, "en"))
    for voice in ("en-us", "en-gb"):
        b.add("wrong_language", f"en-for-fr:{voice}", espeak_wav(EN_TEXTS[0], voice, NORMAL), FOREIGN["fr"][1], "fr",
              b.prompt("fr-fr+m3", "fr"))
    # silent
    noise = np.random.default_rng(41)
    t = np.arange(int(3.0 * RATE)) / RATE
    silent = {"zeros": np.zeros(int(3 * RATE)),
              "white-noise": noise.uniform(-1, 1, int(4 * RATE)) * 0.1,
              "hum": 0.2 * np.sin(2 * np.pi * 50 * t) + 0.05 * np.sin(2 * np.pi * 150 * t),
              "faint-noise": noise.standard_normal(int(3 * RATE)) * 0.001,
              "pink-noise": _pink(noise, int(4 * RATE)),
              "tone-blip": np.concatenate([_gap(1.5), 0.5 * np.sin(2 * np.pi * 1000 * t[:960]), _gap(1.5)])}
    for i, (name, audio) in enumerate(silent.items()):
        v, text = en(i)
        b.add("silent", f"silent:{name}", audio, text, "en", b.prompt(v, "en"))
    # mostly silent: short speech in a long silence, leading silence, trailing noise floor
    for i in range(6):
        v, _ = en(i)
        text = ("Thank you.", "Good morning.", "Yes, of course.")[i % 3]
        speech = espeak_wav(text, v, NORMAL)
        pad = _gap(5.0 + i % 2) if i < 4 else noise.standard_normal(int(5.5 * RATE)) * 0.0005
        audio = np.concatenate([speech, pad]) if i % 2 == 0 else np.concatenate([pad, speech])
        b.add("mostly_silent", ("ms:trailing", "ms:leading")[i % 2], audio, text, "en", b.prompt(v, "en"))
    # clipping: hard-clipped at gains 4-10
    for i, gain in enumerate((4, 6, 8, 10, 5, 7)):
        v, text = en(i + 2)
        b.add("clipping", f"clip:gain{gain}", np.clip(espeak_wav(text, v, NORMAL) * gain, -1, 1), text, "en",
              b.prompt(v, "en"))
    # prompt copy: as is, resampled (22.05 kHz and back), quieter, with noise
    for i in range(6):
        v, text = en(i + 1)
        name, prompt_text = b.prompt(v, "en")
        p = b.prompts[name]
        audio = (p, resample_poly(resample_poly(p, 441, 320), 320, 441), p * 0.6,
                 p + noise.standard_normal(len(p)) * _rms(p) * 0.03, p * 0.9, p)[i]
        kind = ("as-is", "resampled", "quieter", "noise", "gain", "as-is")[i]
        b.add("prompt_copy", f"copy:{kind}", audio, text, "en", (name, prompt_text))


def espeak_with(text: str, voice: str, speed: int, *options: str) -> np.ndarray:
    """eSpeak NG with extra options (``-p`` pitch 0-99, ``-g`` word gap in 10 ms), at 16 kHz, edges trimmed to 50 ms
    (``espeak_wav`` of tests/crafted_failures.py takes no options)."""
    import shutil
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="failset-") as tmp:
        out = Path(tmp) / "out.wav"
        subprocess.run([shutil.which("espeak-ng") or "espeak-ng", "-v", voice, "-s", str(speed), *options, "-w",
                        str(out), text], check=True, capture_output=True, timeout=60)
        audio = read_16k(out)
    voiced = np.nonzero(np.abs(audio) > 1e-3)[0]
    return audio[max(0, voiced[0] - 800):voiced[-1] + 800]


def _pink(rng: np.random.Generator, n: int) -> np.ndarray:
    spectrum = np.fft.rfft(rng.standard_normal(n))
    spectrum /= np.sqrt(np.maximum(np.arange(len(spectrum)), 1))
    pink = np.fft.irfft(spectrum, n)
    return pink * 0.1 / _rms(pink)


def build_set(folder: Path) -> list[Clip]:
    """Writes ``prompts/``, ``generated/<task>__<id>.wav``, ``target.wav``, ``metadata.json`` (a clonebench pair
    manifest) and ``labels.json`` under ``folder``; returns the clips."""
    from clonebench.core.hashing import sha256_file

    folder = Path(folder)
    b = _Builder(folder)
    libri = _librivox()
    _good(b, libri)
    _failures(b, libri)
    (folder / "prompts").mkdir(parents=True, exist_ok=True)
    (folder / "generated").mkdir(parents=True, exist_ok=True)
    for name, audio in b.prompts.items():
        _write(folder / "prompts" / name, audio)
    for clip in b.clips:
        _write(folder / "generated" / f"{TASK}__{clip.id}.wav", b.audio[clip.id])
    # the hidden target: never compared by wer or fail, but a pair needs one; not any generated clip (a leak)
    _write(folder / "target.wav", espeak_wav("This recording is only a placeholder.", "en-us", NORMAL))
    target_sha = sha256_file(folder / "target.wav")
    rows = []
    for i, clip in enumerate(b.clips):
        prompt = folder / "prompts" / clip.prompt
        rows.append({"dataset_name": TASK, "split": "default", "pair_id": clip.id, "speaker_id": clip.prompt,
                     "manifest_variant": "speaker", "source_manifest": "failure_set", "source_row": i,
                     "source_index": i, "prompt_file_name": f"prompts/{clip.prompt}", "target_file_name": "target.wav",
                     "prompt_text": clip.prompt_text, "target_text": clip.text,
                     "prompt_language": clip.prompt_language.upper(), "target_language": clip.language.upper(),
                     "prompt_sha256": sha256_file(prompt), "target_sha256": target_sha})
    (folder / "metadata.json").write_text(json.dumps({"schema": "clonebench.pairs/v1", "subset": TASK,
                                                      "description": "failure-flag evaluation set", "pairs": rows},
                                                     ensure_ascii=False, indent=1))
    (folder / "labels.json").write_text(json.dumps([asdict(c) for c in b.clips], ensure_ascii=False, indent=1))
    return b.clips


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "failure_set")
    clips = build_set(out)
    from collections import Counter

    print(len(clips), dict(Counter((c.cls, c.split) for c in clips)))
