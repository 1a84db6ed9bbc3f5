"""CRAFTED FAILURE CLIPS for tests of the failure-modes detector (silent, mostly_silent, truncated, overlong,
looping, babble, wrong_language, clipping, prompt_copy).

``build_crafted(folder)`` writes one generated clip per failure mode, plus the voice prompt they all share, and
returns {case name: CraftedCase}. Speech is eSpeak NG (``espeak-ng -v <voice> -s <speed> -w out.wav "text"``,
deterministic for one eSpeak NG version; 1.51 on Debian 12), resampled to 16 kHz mono PCM16 with scipy's polyphase
filter; noise and the babble offsets come from fixed numpy seeds. No network.

``expected`` holds the flags the detector MUST raise on a case, ``forbidden`` those it must NOT raise; a flag in
neither is left to the detector (e.g. loop3 and french also raise babble with Whisper base: its fallback decode
of repeated or foreign speech is garbage). ``note`` says what a case is and why its sets are what they are.
``librivox_clips()`` lists Debian's pocketsphinx-testdata LibriVox clips (real read speech) with their transcripts.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
from scipy.signal import resample_poly

FLAGS = frozenset({"silent", "mostly_silent", "truncated", "overlong", "looping", "babble", "wrong_language",
                   "clipping", "prompt_copy"})

RATE = 16_000
PROMPT_RESAMPLED_RATE = 22_050
LANGUAGE = "en"

TARGET_TEXT = "After dinner we sat on the porch and listened to the rain falling on the roof."  # 16 words
TARGET_TEXT_FR = ("Après le dîner, nous nous sommes assis sous le porche et nous avons écouté la pluie tomber "
                  "sur le toit.")
PROMPT_TEXT = "Please remember to water the tomato plants every evening."  # about 3.1 s
SHORT_TEXT = "Thank you."  # mostly_silent: its speech, fitted into MOSTLY_SILENT_SPEECH_S
BABBLE = (  # (eSpeak voice, words per minute, sentence): four talkers, none of them the target sentence
    ("en-us+f2", 170, "My sister bought a bright red bicycle at the market on Saturday morning."),
    ("en+m1", 150, "Nobody expected the train to arrive so early after the long winter storm."),
    ("en-us+m7", 185, "Could you bring two cups of coffee and a slice of lemon cake, please?"),
    ("en-gb+f4", 160, "The children painted colourful pictures of horses and boats all afternoon."),
)

TARGET_VOICE, TARGET_SPEED = "en-us", 165
PROMPT_VOICE, PROMPT_SPEED = "en-us+m3", 165
FRENCH_VOICE = "fr"
SPEECH_MARGIN_S = 0.05

NOISE_S, NOISE_DBFS, NOISE_SEED = 4.0, -12.0, 20240611
BABBLE_SEED, BABBLE_MAX_OFFSET_S, BABBLE_PEAK = 7, 1.5, 0.7
BLIP_TOTAL_S, BLIP_S, BLIP_HZ, BLIP_PEAK = 3.0, 0.060, 1000.0, 0.5
MOSTLY_SILENT_SPEECH_S, MOSTLY_SILENT_PAD_S = 0.8, 6.0
CLIP_GAIN = 8.0
PROMPT_GAIN = 0.8


@dataclass(frozen=True)
class CraftedCase:
    name: str
    wav: Path            # the "generated" clip under test
    prompt_wav: Path     # the voice prompt (the same file for every case)
    prompt_text: str
    target_text: str     # what the clip was asked to say
    language: str        # the task's target language
    expected: frozenset  # flags that MUST be raised
    forbidden: frozenset  # flags that must NOT be raised
    note: str = ""


def espeak_wav(text: str, voice: str, speed: int, rate: int = RATE) -> np.ndarray:
    """Mono float64 speech from the espeak-ng binary (22.05 kHz native), resampled to ``rate``, its leading and
    trailing silence trimmed to SPEECH_MARGIN_S (eSpeak ends each utterance with ~0.3 s of silence, which would
    skew the duration ratios between cases)."""
    binary = shutil.which("espeak-ng")
    if binary is None:
        raise RuntimeError("espeak-ng is missing: run `bash scripts/setup.sh` (apt-get install espeak-ng)")
    with tempfile.TemporaryDirectory(prefix="crafted-espeak-") as tmp:
        out = Path(tmp) / "out.wav"
        subprocess.run([binary, "-v", voice, "-s", str(speed), "-w", str(out), text],
                       check=True, capture_output=True, timeout=60)
        audio, native = sf.read(str(out), dtype="float64", always_2d=True)
    audio = audio.mean(axis=1)
    if native != rate:
        g = np.gcd(int(rate), int(native))
        audio = resample_poly(audio, rate // g, native // g)
    voiced = np.nonzero(np.abs(audio) > 1e-3)[0]
    if len(voiced) == 0:
        raise RuntimeError(f"espeak-ng -v {voice} produced no speech for {text!r}")
    margin = int(SPEECH_MARGIN_S * rate)
    return audio[max(0, voiced[0] - margin):voiced[-1] + 1 + margin]


def _write(path: Path, audio: np.ndarray, rate: int = RATE) -> Path:
    sf.write(str(path), np.clip(audio, -1.0, 1.0), rate, subtype="PCM_16", format="WAV")
    return path


def _white_noise() -> np.ndarray:
    # Uniform, not Gaussian: at -12 dBFS RMS a Gaussian's tails reach full scale, and this case forbids clipping.
    noise = np.random.default_rng(NOISE_SEED).uniform(-1.0, 1.0, int(NOISE_S * RATE))
    return noise * (10 ** (NOISE_DBFS / 20) / np.sqrt(np.mean(noise ** 2)))


def _babble() -> np.ndarray:
    rng = np.random.default_rng(BABBLE_SEED)
    talkers = [espeak_wav(text, voice, speed) for voice, speed, text in BABBLE]
    offsets = rng.integers(0, int(BABBLE_MAX_OFFSET_S * RATE), size=len(talkers))
    mix = np.zeros(max(int(o) + len(t) for o, t in zip(offsets, talkers)))
    for offset, talker in zip(offsets, talkers):
        mix[int(offset):int(offset) + len(talker)] += talker / np.sqrt(np.mean(talker ** 2))  # equal loudness
    return mix * (BABBLE_PEAK / np.abs(mix).max())


def _silence_blip() -> np.ndarray:
    out = np.zeros(int(BLIP_TOTAL_S * RATE))
    n = int(BLIP_S * RATE)
    blip = BLIP_PEAK * np.sin(2 * np.pi * BLIP_HZ * np.arange(n) / RATE)
    ramp = int(0.005 * RATE)  # 5 ms raised-cosine edges: no clicks outside the blip
    edge = 0.5 - 0.5 * np.cos(np.pi * np.arange(ramp) / ramp)
    blip[:ramp] *= edge
    blip[-ramp:] *= edge[::-1]
    start = (len(out) - n) // 2
    out[start:start + n] = blip
    return out


def _mostly_silent() -> np.ndarray:
    speech = espeak_wav(SHORT_TEXT, TARGET_VOICE, TARGET_SPEED)
    voiced = np.nonzero(np.abs(speech) > 1e-3)[0]
    speech = speech[voiced[0]:voiced[-1] + 1][:int(MOSTLY_SILENT_SPEECH_S * RATE)]
    head = np.zeros(int(MOSTLY_SILENT_SPEECH_S * RATE))
    head[:len(speech)] = speech
    fade = int(0.010 * RATE)
    head[-fade:] *= np.linspace(1.0, 0.0, fade)  # if it was cut mid-word, no click at the cut
    return np.concatenate([head, np.zeros(int(MOSTLY_SILENT_PAD_S * RATE))])


def build_crafted(folder: Path) -> dict[str, CraftedCase]:
    """Writes the prompt and one WAV per case into ``folder``; returns {case name: CraftedCase}."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    prompt_wav = _write(folder / "prompt.wav", espeak_wav(PROMPT_TEXT, PROMPT_VOICE, PROMPT_SPEED))
    clean = espeak_wav(TARGET_TEXT, TARGET_VOICE, TARGET_SPEED)
    words = TARGET_TEXT.split()
    half_text = " ".join(words[:len(words) // 2])
    prompt, prompt_rate = sf.read(str(prompt_wav), dtype="float64")
    assert prompt_rate == RATE

    audio: dict[str, np.ndarray | None] = {
        "clean_en": clean,
        "loop3": espeak_wav(" ".join([TARGET_TEXT] * 3), TARGET_VOICE, TARGET_SPEED),
        "half": espeak_wav(half_text, TARGET_VOICE, TARGET_SPEED),
        "french": espeak_wav(TARGET_TEXT_FR, FRENCH_VOICE, TARGET_SPEED),
        "white_noise": _white_noise(),
        "babble": _babble(),
        "silence_blip": _silence_blip(),
        "mostly_silent": _mostly_silent(),
        "clipped": np.clip(clean * CLIP_GAIN, -1.0, 1.0),
        "prompt_as_is": None,
        "prompt_resampled": None,
    }
    not_copy, not_clipped = {"prompt_copy"}, {"clipping"}
    spec = {  # name -> (target_text, expected, forbidden, note)
        "clean_en": (TARGET_TEXT, set(), set(FLAGS), "eSpeak en-us saying the target sentence once."),
        "loop3": (TARGET_TEXT, {"looping", "overlong"}, {"silent", "truncated"} | not_copy | not_clipped,
                  "The target sentence three times in one eSpeak call."),
        "half": (TARGET_TEXT, {"truncated"}, {"silent", "overlong", "looping"} | not_copy | not_clipped,
                 f"Only the first half of the target's words: {half_text!r}."),
        "french": (TARGET_TEXT, {"wrong_language"}, {"silent"} | not_copy | not_clipped,
                   "The target's meaning in French (eSpeak 'fr'); the task's language is English."),
        "white_noise": (TARGET_TEXT, {"silent"}, not_copy | not_clipped,
                        (f"{NOISE_S:g} s of uniform white noise at {NOISE_DBFS:g} dBFS RMS (peak about -7 dBFS). "
                         "No speech: Silero VAD finds none, so it is silent (and a silent clip is not judged "
                         "for babble or language).")),
        "babble": (TARGET_TEXT, {"babble"}, not_copy,
                   ("Four eSpeak talkers (different voices and sentences) overlapping at seeded offsets, "
                    f"peak-normalised to {BABBLE_PEAK}. Speech to the VAD, but Whisper's transcript is far from "
                    "the text and unsure (low average log-probability): babble.")),
        "silence_blip": (TARGET_TEXT, {"silent"}, not_copy | not_clipped,
                         (f"{BLIP_TOTAL_S:g} s of digital silence with a {BLIP_S * 1000:g} ms {BLIP_HZ:g} Hz "
                          "blip in the middle.")),
        "mostly_silent": (SHORT_TEXT, {"mostly_silent"}, {"silent"} | not_copy | not_clipped,
                          (f"{MOSTLY_SILENT_SPEECH_S:g} s holding eSpeak saying {SHORT_TEXT!r}, then "
                           f"{MOSTLY_SILENT_PAD_S:g} s of digital silence; its target_text is that phrase.")),
        "clipped": (TARGET_TEXT, {"clipping"}, {"silent"} | not_copy,
                    f"clean_en x{CLIP_GAIN:g}, hard-clipped to [-1, 1]."),
        "prompt_as_is": (TARGET_TEXT, {"prompt_copy"}, {"silent"} | not_clipped,
                         "A byte copy of the prompt WAV."),
        "prompt_resampled": (TARGET_TEXT, {"prompt_copy"}, {"silent"} | not_clipped,
                             ("The prompt resampled 16 kHz -> 22.05 kHz (scipy resample_poly 441/320), "
                              f"gain {PROMPT_GAIN}.")),
    }
    cases = {}
    for name, (target_text, expected, forbidden, note) in spec.items():
        wav = folder / f"{name}.wav"
        if name == "prompt_as_is":
            shutil.copyfile(prompt_wav, wav)
        elif name == "prompt_resampled":
            _write(wav, PROMPT_GAIN * resample_poly(prompt, 441, 320), PROMPT_RESAMPLED_RATE)
        else:
            _write(wav, audio[name])
        assert not expected & forbidden and expected | forbidden <= FLAGS, name
        cases[name] = CraftedCase(name=name, wav=wav, prompt_wav=prompt_wav, prompt_text=PROMPT_TEXT,
                                  target_text=target_text, language=LANGUAGE, expected=frozenset(expected),
                                  forbidden=frozenset(forbidden), note=note)
    return cases


def librivox_clips() -> list[tuple[Path, str]]:
    """[(wav, transcript)] of Debian's pocketsphinx-testdata LibriVox clips (16 kHz read English, one reader),
    sorted by path; [] when the package is not installed. Uses the conftest's locator and transcript reader."""
    from tests.conftest import LIBRIVOX, sphinx_transcripts

    if not (LIBRIVOX / "transcription").is_file():
        return []
    transcripts = sphinx_transcripts(LIBRIVOX, "transcription")
    return sorted((LIBRIVOX / f"{clip}.wav", text) for clip, text in transcripts.items()
                  if (LIBRIVOX / f"{clip}.wav").is_file())
