"""WAV validation shared by input checks and server responses.

Rules (stated once, applied everywhere): a WAV-family container that libsndfile reads — RIFF/WAVE with a plain
PCM or IEEE-float format tag, WAVE_FORMAT_EXTENSIBLE (what ffmpeg writes for every 24-bit, float or above-48 kHz
WAV, and libsndfile for several subtypes), or RF64 (64-bit sizes in its ds64 chunk) — whose declared data size
fits in the bytes received; PCM (8/16/24/32-bit) or IEEE float (32/64-bit) samples, sample rate > 0, at least one
frame, every sample finite. Any rate and channel count is accepted and described; scorers resample and downmix
(channel mean) as rvcbench's do.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from pathlib import PurePath

import numpy as np
import soundfile as sf

ACCEPTED_SUBTYPES = frozenset({"PCM_U8", "PCM_S8", "PCM_16", "PCM_24", "PCM_32", "FLOAT", "DOUBLE"})


class InvalidAudio(ValueError):
    """The bytes are not a valid WAV by the rules above; the message says which rule failed."""


class EmptyAudio(InvalidAudio):
    """A valid WAV header with no audio frames."""


class NonFiniteAudio(InvalidAudio):
    """Float samples that are NaN or infinite."""


@dataclass(frozen=True)
class WavInfo:
    sample_rate: int
    frames: int
    channels: int
    subtype: str

    @property
    def duration_s(self) -> float:
        return self.frames / self.sample_rate


WAV_FORMATS = frozenset({"WAV", "WAVEX", "RF64"})  # libsndfile's names for the WAV family it reads
_RF64_UNKNOWN = 0xFFFFFFFF  # an RF64 chunk whose real size is in the ds64 chunk
# the RIFF data size a writer that cannot seek back leaves (ffmpeg writing to a pipe): "until the end". Only this
# exact placeholder means it; any other size beyond the bytes received is a truncated file or a bomb.
_STREAMED = 0xFFFFFFFF


def _check_riff(data: bytes) -> None:
    """The container's declared data size fits in ``data``: a truncated file or a header that claims more than was
    received (a decompression-bomb-like header) is refused before libsndfile reads anything."""
    rf64 = data[:4] == b"RF64"
    if len(data) < 12 or data[:4] not in (b"RIFF", b"RF64") or data[8:12] != b"WAVE":
        # the bytes themselves are never echoed (a file may be anything, a secret included): a category only
        raise InvalidAudio(f"not a RIFF/WAVE or RF64 file ({_not_wav_kind(data)}, {len(data)} bytes)")
    pos, data_size64 = 12, None
    while pos + 8 <= len(data):
        chunk_id, size = data[pos:pos + 4], struct.unpack("<I", data[pos + 4:pos + 8])[0]
        if chunk_id == b"ds64" and rf64:
            if size < 24 or pos + 8 + 24 > len(data):
                raise InvalidAudio("RF64 file with a truncated ds64 chunk")
            data_size64 = struct.unpack("<Q", data[pos + 16:pos + 24])[0]
        if chunk_id == b"data":
            if rf64 and size == _RF64_UNKNOWN:
                if data_size64 is None:
                    raise InvalidAudio("RF64 data chunk without a ds64 chunk giving its size")
                size = data_size64
            elif not rf64 and size == _STREAMED:
                return  # a streamed WAV (ffmpeg to a pipe): its data runs to the end of what was received
            if pos + 8 + size > len(data):
                raise InvalidAudio(
                    f"truncated WAV: data chunk declares {size} bytes, {len(data) - pos - 8} present"
                )
            return
        if rf64 and size == _RF64_UNKNOWN:
            raise InvalidAudio("RF64 file with a chunk of unknown size before the data chunk")
        pos += 8 + size + (size & 1)
    raise InvalidAudio("WAV has no complete data chunk")


def _not_wav_kind(data: bytes) -> str:
    """What a file that is not a WAV looks like, as a category (never its bytes)."""
    if len(data) < 12:
        return "too short for a WAV header"
    if data[:4] in (b"RIFF", b"RF64"):
        return "a RIFF container that is not WAVE"
    head = data[:512]
    if head[:4] in (b"fLaC", b"OggS") or head[:3] == b"ID3" or head[:2] in (b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"):
        return "another audio container"
    if b"\x00" not in head:
        try:
            head.decode("utf-8")
            return "text, not audio"
        except UnicodeDecodeError:
            pass
    return "binary data that is not a WAV"


# how many leading bytes wav_header_duration needs at most: the chunks before "data" (fmt, fact, LIST, ds64, ...)
HEADER_BYTES = 1 << 16


def wav_header_duration(head: bytes, file_size: int) -> float | None:
    """The duration in seconds a WAV's header declares, read from its first bytes (``head``, up to
    ``HEADER_BYTES``) without decoding anything: the data chunk's declared size (RF64: the ds64 size; a streamed
    WAV's placeholder: the rest of the file) over the fmt chunk's block align and rate. What the header claims, even
    when fewer bytes follow: a claim of hours is refused as such, before the truncation is even looked at. None when the header cannot be
    read this way (not a WAV, no fmt or data chunk within ``head``): the full validation then says why."""
    if len(head) < 12 or head[:4] not in (b"RIFF", b"RF64") or head[8:12] != b"WAVE":
        return None
    rf64 = head[:4] == b"RF64"
    pos, rate, align, size64 = 12, None, None, None
    while pos + 8 <= len(head):
        chunk_id, size = head[pos:pos + 4], struct.unpack("<I", head[pos + 4:pos + 8])[0]
        if chunk_id == b"ds64" and rf64 and pos + 8 + 24 <= len(head):
            size64 = struct.unpack("<Q", head[pos + 16:pos + 24])[0]
        elif chunk_id == b"fmt " and pos + 8 + 16 <= len(head):
            _tag, channels, rate, _bytes_per_s, align = struct.unpack("<HHIIH", head[pos + 8:pos + 22])
            if channels < 1 or rate < 1 or align < 1:
                return None
        elif chunk_id == b"data":
            if rate is None or align is None:
                return None
            if rf64 and size == _RF64_UNKNOWN and size64 is not None:
                size = size64
            elif size == _STREAMED:
                size = max(0, file_size - pos - 8)
            return (size // align) / rate
        if rf64 and size == _RF64_UNKNOWN:
            return None
        pos += 8 + size + (size & 1)
    return None


FLOAT_SUBTYPES = frozenset({"FLOAT", "DOUBLE"})


def _read(data: bytes, decode: bool) -> tuple[WavInfo, np.ndarray | None]:
    _check_riff(data)
    try:
        with sf.SoundFile(io.BytesIO(data)) as handle:
            if handle.format not in WAV_FORMATS:
                raise InvalidAudio(f"container is {handle.format}, expected a WAV (RIFF/WAVE, WAVE_FORMAT_EXTENSIBLE "
                                   "or RF64)")
            if handle.subtype not in ACCEPTED_SUBTYPES:
                raise InvalidAudio(f"sample format {handle.subtype} is neither PCM nor float")
            info = WavInfo(handle.samplerate, handle.frames, handle.channels, handle.subtype)
            if info.sample_rate <= 0:
                raise InvalidAudio(f"sample rate {info.sample_rate} is not positive")
            if info.frames < 1:
                raise EmptyAudio("WAV has no audio frames")
            # integer PCM cannot hold NaN or infinity: only float data needs decoding to be checked
            samples = handle.read(dtype="float32", always_2d=True) if decode or info.subtype in FLOAT_SUBTYPES else None
    except sf.LibsndfileError as exc:
        raise InvalidAudio(f"unreadable WAV: {exc}") from exc
    if samples is not None:
        if samples.shape[0] != info.frames:
            raise InvalidAudio(f"WAV declares {info.frames} frames, {samples.shape[0]} could be read")
        if not np.isfinite(samples).all():
            bad = int((~np.isfinite(samples)).sum())
            raise NonFiniteAudio(f"{bad} sample(s) are NaN or infinite")
    return info, samples


def inspect_wav(data: bytes) -> tuple[WavInfo, np.ndarray]:
    """Validate WAV bytes and return their description and samples (frames x channels, float32)."""
    return _read(data, decode=True)


def validate_wav(data: bytes) -> WavInfo:
    """Validate WAV bytes without keeping their samples (decoded only where NaN/inf are possible)."""
    return _read(data, decode=False)[0]


# Input recordings a dataset may hold besides WAV (RVCBench's CommonVoice French clips are MP3): a file whose name
# ends in one of these is checked as that container, decoded by libsndfile; any other name must be a valid WAV.
INPUT_CONTAINERS = {".mp3": "MP3", ".flac": "FLAC", ".ogg": "OGG", ".opus": "OGG"}
MIME_TYPES = {"WAV": "audio/wav", "MP3": "audio/mpeg", "FLAC": "audio/flac", "OGG": "audio/ogg"}


def input_container(name: str | None) -> str:
    """The container an input file's name declares: MP3, FLAC, OGG, else WAV."""
    return INPUT_CONTAINERS.get(PurePath(str(name or "")).suffix.lower(), "WAV")


def validate_input_audio(data: bytes, name: str | None = None) -> WavInfo:
    """Validate an input recording: a WAV by the rules above, or the compressed container its name declares
    (same rules: readable, rate > 0, at least one frame, every decoded sample finite)."""
    container = input_container(name)
    if container == "WAV":
        return validate_wav(data)
    try:
        with sf.SoundFile(io.BytesIO(data)) as handle:
            if handle.format != container:
                raise InvalidAudio(f"container is {handle.format}, but the file name says {container}")
            samples = handle.read(dtype="float32", always_2d=True)
            info = WavInfo(handle.samplerate, samples.shape[0], handle.channels, handle.subtype)
    except (sf.LibsndfileError, RuntimeError) as exc:
        raise InvalidAudio(f"unreadable {container} file: {exc}") from exc
    if info.sample_rate <= 0 or info.frames < 1:
        raise InvalidAudio(f"{container} file has no audio frames (rate {info.sample_rate})")
    if not np.isfinite(samples).all():
        raise InvalidAudio(f"{int((~np.isfinite(samples)).sum())} decoded sample(s) are NaN or infinite")
    return info


def read_input_audio(data: bytes) -> tuple[WavInfo, np.ndarray]:
    """Description and samples of an input recording in any container libsndfile decodes (WAV, MP3, FLAC, OGG)."""
    if data[:4] in (b"RIFF", b"RF64"):
        return inspect_wav(data)
    try:
        samples, rate = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError) as exc:
        raise InvalidAudio(f"unreadable audio: {exc}") from exc
    return WavInfo(rate, samples.shape[0], samples.shape[1], "decoded"), samples


def to_mono(samples: np.ndarray) -> np.ndarray:
    """Downmix rule: the mean over channels."""
    return samples.mean(axis=1) if samples.ndim == 2 else samples
