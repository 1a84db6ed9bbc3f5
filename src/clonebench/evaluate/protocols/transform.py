"""Post-processing of generated audio for derived tasks (codec compression, telephone band), as rvcbench 2.2.1's
``benchmark/submission.py:transform_audio`` does it, with the same two ffmpeg command lines:

- codec: ``ffmpeg -i SRC -ac 1 -ar RATE -c:a ENCODER -b:a BITRATE TMP.{mp3,m4a,ogg}`` (libmp3lame, aac, libopus);
- narrowband: ``ffmpeg -i SRC -ac 1 -af highpass=f=300,lowpass=f=3400 -ar 8000 -c:a pcm_s16le TMP_8k.wav``;
- then ``ffmpeg -i TMP -ac 1 -ar RATE -c:a pcm_s16le DEST.wav`` (16-bit mono at the task's rate, 24 kHz default),

each with ``-nostdin -hide_banner -loglevel error -y``. ffmpeg (and its encoder libraries) decide the samples, so
their versions are the transform's fingerprint (``ffmpeg_fingerprint``). clonebench differs in the plumbing only:
the intermediate file lives in a private folder beside the destination (inside the run), the WAV is decoded into a
temporary name and renamed into place after an fsync (a reader never sees half a file), the source is read only
and never overwritten, and a missing ffmpeg or encoder is refused (``check_ffmpeg``) before any scoring.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from clonebench.core.atomic import fsync_dir
from clonebench.core.errors import ConfigError, DependencyError
from clonebench.core.hashing import sha256_file

CODECS = {"mp3": ("libmp3lame", ".mp3"), "aac": ("aac", ".m4a"), "opus": ("libopus", ".ogg")}
NARROWBAND_FILTER = "highpass=f=300,lowpass=f=3400"
NARROWBAND_RATE = 8000
DEFAULT_RATE = 24000
QUIET = ("-nostdin", "-hide_banner", "-loglevel", "error", "-y")
INSTALL_FFMPEG = "apt-get install ffmpeg (Debian's build has libmp3lame, aac and libopus), or bash scripts/setup.sh"
# shared libraries of external encoders, and the call that returns their version string
_LIBRARIES = {"libmp3lame": ("libmp3lame", "get_lame_version"), "libopus": ("libopus", "opus_get_version_string")}
_BITRATE = re.compile(r"[1-9][0-9]*k?")


@dataclass(frozen=True)
class Transform:
    """A suite task's ``transform`` block: ``{"kind": "codec", "codec": "mp3", "bitrate": "64k", "sample_rate":
    24000}`` or ``{"kind": "narrowband", "sample_rate": 24000}``."""

    kind: str
    sample_rate: int = DEFAULT_RATE
    codec: str | None = None
    bitrate: str | None = None

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], where: str = "transform") -> "Transform":
        """Validated; a bad block raises ConfigError naming ``where`` and the key."""
        kind = spec.get("kind")
        known = {"codec": {"kind", "codec", "bitrate", "sample_rate"}, "narrowband": {"kind", "sample_rate"}}
        if kind not in known:
            raise ConfigError(f"{where}.kind={kind!r}: expected 'codec' or 'narrowband'")
        unknown = sorted(set(spec) - known[kind])
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {unknown} for kind {kind!r}")
        rate = spec.get("sample_rate", DEFAULT_RATE)
        if isinstance(rate, bool) or not isinstance(rate, int) or not 8000 <= rate <= 192000:
            raise ConfigError(f"{where}.sample_rate={rate!r}: expected an integer rate in Hz (8000..192000)")
        if kind == "narrowband":
            return cls(kind, rate)
        codec, bitrate = spec.get("codec"), spec.get("bitrate")
        if codec not in CODECS:
            raise ConfigError(f"{where}.codec={codec!r}: expected one of {sorted(CODECS)}")
        if not isinstance(bitrate, str) or not _BITRATE.fullmatch(bitrate):
            raise ConfigError(f"{where}.bitrate={bitrate!r}: expected ffmpeg's form, e.g. '64k'")
        return cls(kind, rate, codec, bitrate)

    @property
    def encoder(self) -> str:
        return CODECS[self.codec][0] if self.kind == "codec" else "pcm_s16le"

    def describe(self) -> dict:
        spec = {"kind": self.kind, "sample_rate": self.sample_rate}
        return {**spec, "codec": self.codec, "bitrate": self.bitrate} if self.kind == "codec" else spec

    def commands(self, ffmpeg: str, source: Path, work: Path, destination: Path) -> tuple[list[str], list[str]]:
        """Upstream's encode and decode command lines; the intermediate is ``work/<destination stem><suffix>``."""
        rate = str(int(self.sample_rate))
        quiet = [ffmpeg, *QUIET]
        if self.kind == "codec":
            intermediate = work / (destination.stem + CODECS[self.codec][1])
            encode = [*quiet, "-i", str(source), "-ac", "1", "-ar", rate, "-c:a", self.encoder,
                      "-b:a", str(self.bitrate), str(intermediate)]
        else:
            intermediate = work / (destination.stem + "_8k.wav")
            encode = [*quiet, "-i", str(source), "-ac", "1", "-af", NARROWBAND_FILTER,
                      "-ar", str(NARROWBAND_RATE), "-c:a", "pcm_s16le", str(intermediate)]
        decode = [*quiet, "-i", str(intermediate), "-ac", "1", "-ar", rate, "-c:a", "pcm_s16le", str(destination)]
        return encode, decode


def _ffmpeg() -> str:
    path = shutil.which("ffmpeg")
    if path is None:
        raise DependencyError(f"derived tasks (compression, narrowband) need the ffmpeg command, which is not on "
                              f"PATH: {INSTALL_FFMPEG}")
    return path


def _run(command: list[str]) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def check_ffmpeg(transforms: list[Transform]) -> dict:
    """Refuse (DependencyError naming the encoder and the fix) unless ffmpeg has every encoder ``transforms`` use;
    returns ``ffmpeg_fingerprint()``. Call before any scoring."""
    ffmpeg = _ffmpeg()
    listed = _run([ffmpeg, "-hide_banner", "-encoders"])
    available = {line.split()[1] for line in listed.splitlines() if len(line.split()) > 1 and line.startswith(" A")}
    needed = sorted({t.encoder for t in transforms} | {"pcm_s16le"})
    missing = [encoder for encoder in needed if encoder not in available]
    if missing:
        raise DependencyError(f"derived tasks need the ffmpeg audio encoder(s) {missing}, which {ffmpeg} lacks "
                              f"(`ffmpeg -encoders`): {INSTALL_FFMPEG}")
    return ffmpeg_fingerprint()


def _linked_library(ffmpeg: str, stem: str) -> Path | None:
    """The shared library ``stem`` that the dynamic linker gives ffmpeg (None: linked statically, or no ldd)."""
    try:
        listing = _run(["ldd", ffmpeg])
    except (OSError, subprocess.CalledProcessError):
        return None
    for line in listing.splitlines():
        name, _, rest = line.strip().partition(" => ")
        if name.startswith(stem + ".so") and rest.split():
            return Path(rest.split()[0]).resolve()
    return None


def _library_version(path: Path, function: str) -> str | None:
    try:
        call = getattr(ctypes.CDLL(str(path)), function)
    except (OSError, AttributeError):
        return None
    call.restype = ctypes.c_char_p
    return call().decode("utf-8", "replace")


@lru_cache(maxsize=4)
def _fingerprint(ffmpeg: str, mtime_ns: int) -> dict:
    lines = _run([ffmpeg, "-hide_banner", "-version"]).splitlines()
    libraries = {}
    for line in lines:
        match = re.match(r"(lib\w+)\s+([\d. ]+?)\s*/", line)
        if match:
            libraries[match.group(1)] = match.group(2).replace(" ", "")
    encoders = {"aac": f"native (libavcodec {libraries.get('libavcodec')})",
                "pcm_s16le": f"native (libavcodec {libraries.get('libavcodec')})"}
    for encoder, (stem, function) in _LIBRARIES.items():
        path = _linked_library(ffmpeg, stem)
        encoders[encoder] = ({"library": path.name, "version": _library_version(path, function),
                              "sha256": sha256_file(path)} if path else "linked into the ffmpeg binary")
    return {"ffmpeg": lines[0].split(" Copyright")[0] if lines else "unknown", "binary_sha256": sha256_file(Path(ffmpeg)),
            "libraries": libraries, "encoders": encoders}


def ffmpeg_fingerprint() -> dict:
    """ffmpeg's version line, binary sha256, its lib* versions and each encoder's library (version string, sha256)."""
    ffmpeg = os.path.realpath(_ffmpeg())
    return _fingerprint(ffmpeg, os.stat(ffmpeg).st_mtime_ns)


def transform_wav(source: Path, destination: Path, transform: Transform) -> str:
    """Write ``transform`` of ``source`` to ``destination`` (a .wav; atomically); returns its sha256.

    ``source`` is only read; the intermediate lives in a private folder beside ``destination`` and is removed."""
    source, destination = Path(source), Path(destination)
    if destination.suffix.lower() != ".wav":
        raise ValueError(f"{destination}: a derived clip is written as .wav")
    if destination.exists() and destination.resolve() == source.resolve():
        raise ValueError(f"{destination} is the source clip itself: originals are never overwritten")
    ffmpeg = _ffmpeg()
    destination.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".transform-", dir=destination.parent))  # same file system: atomic rename
    try:
        encode, decode = transform.commands(ffmpeg, source, work, destination)
        decode[-1] = str(work / destination.name)  # decoded inside the private folder, then renamed into place
        for command in (encode, decode):
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"ffmpeg failed on {source} ({transform.describe()}): "
                                   f"{done.stderr.strip()[-500:] or f'exit {done.returncode}'}")
        with open(decode[-1], "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(decode[-1], destination)
        fsync_dir(destination.parent)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return sha256_file(destination)


def fingerprint(transform: Transform) -> dict:
    """What decides a derived clip: the transform, upstream's command lines (placeholders) and ffmpeg's versions."""
    encode, decode = transform.commands("ffmpeg", Path("SOURCE"), Path("WORK"), Path("DEST.wav"))
    return {"transform": transform.describe(), "commands": [" ".join(encode), " ".join(decode)],
            "ffmpeg": ffmpeg_fingerprint()}
