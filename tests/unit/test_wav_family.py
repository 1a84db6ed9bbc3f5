"""Every WAV a model writes is accepted and decoded as soundfile decodes it; what is not audio, truncated or a
bomb is still refused (``clonebench.data.audio``).

One short excerpt of real LibriVox speech is written as each member of the WAV family that libsndfile reads:
by ffmpeg (24/32-bit, float32/64 and 96 kHz are WAVE_FORMAT_EXTENSIBLE, 8-bit and stereo 16-bit plain WAV,
``-rf64 always`` RF64 with its ds64 chunk) and by soundfile (WAV, WAVEX and RF64 with every PCM and float subtype).
``write_variants`` is shared with ``tests/integration/test_wav_family_paths.py``.
"""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from clonebench.data import audio as audio_module
from clonebench.data.audio import (
    InvalidAudio,
    NonFiniteAudio,
    inspect_wav,
    read_input_audio,
    validate_input_audio,
    validate_wav,
)
from tests.conftest import LIBRIVOX, REPO

SOURCE = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0870.wav"  # 16 kHz mono PCM_16, 7.1 s, one reader
START_S, SECONDS = 0.5, 2.0
RATE = 16_000
RF64_UNKNOWN = 0xFFFFFFFF


@dataclass(frozen=True)
class Variant:
    name: str
    path: Path
    writer: str        # ffmpeg or soundfile
    format: str        # libsndfile's container name: WAV, WAVEX or RF64
    subtype: str
    rate: int
    channels: int


# name -> (ffmpeg output arguments, the container libsndfile sees, subtype, rate, channels)
FFMPEG = {
    "ffmpeg-pcm_s24le": (["-c:a", "pcm_s24le"], "WAVEX", "PCM_24", RATE, 1),
    "ffmpeg-pcm_f32le": (["-c:a", "pcm_f32le"], "WAVEX", "FLOAT", RATE, 1),
    "ffmpeg-pcm_f64le": (["-c:a", "pcm_f64le"], "WAVEX", "DOUBLE", RATE, 1),
    "ffmpeg-pcm_s32le": (["-c:a", "pcm_s32le"], "WAVEX", "PCM_32", RATE, 1),
    "ffmpeg-pcm_u8": (["-c:a", "pcm_u8"], "WAV", "PCM_U8", RATE, 1),
    "ffmpeg-pcm_s16le-96k": (["-c:a", "pcm_s16le", "-ar", "96000"], "WAVEX", "PCM_16", 96_000, 1),
    "ffmpeg-pcm_s16le-stereo": (["-c:a", "pcm_s16le", "-ac", "2"], "WAV", "PCM_16", RATE, 2),
    "ffmpeg-pcm_f32le-48k-stereo": (["-c:a", "pcm_f32le", "-ar", "48000", "-ac", "2"], "WAVEX", "FLOAT", 48_000, 2),
    "ffmpeg-pcm_s16le-8k": (["-c:a", "pcm_s16le", "-ar", "8000"], "WAV", "PCM_16", 8_000, 1),
    "ffmpeg-rf64-pcm_s16le": (["-c:a", "pcm_s16le", "-rf64", "always"], "RF64", "PCM_16", RATE, 1),
    "ffmpeg-rf64-pcm_s24le": (["-c:a", "pcm_s24le", "-rf64", "always"], "RF64", "PCM_24", RATE, 1),
    "ffmpeg-rf64-pcm_f32le": (["-c:a", "pcm_f32le", "-rf64", "always"], "RF64", "FLOAT", RATE, 1),
}
SUBTYPES = ("PCM_U8", "PCM_16", "PCM_24", "PCM_32", "FLOAT", "DOUBLE")
SOUNDFILE = {f"soundfile-{container}-{subtype}": (container, subtype)
             for container in ("WAV", "WAVEX", "RF64") for subtype in SUBTYPES}
NAMES = sorted(FFMPEG) + sorted(SOUNDFILE)
SUBTYPE = {**{n: spec[2] for n, spec in FFMPEG.items()}, **{n: spec[1] for n, spec in SOUNDFILE.items()}}
FLOAT_NAMES = [n for n in NAMES if SUBTYPE[n] in ("FLOAT", "DOUBLE")]
RF64_NAMES = [n for n in NAMES if "rf64" in n.lower()]


def ffmpeg() -> str:
    found = shutil.which("ffmpeg")
    if found is None:
        pytest.fail("ffmpeg is missing: run `bash scripts/setup.sh` (apt-get install ffmpeg)")
    return found


def source_excerpt() -> np.ndarray:
    if not SOURCE.is_file():
        pytest.fail("pocketsphinx-testdata is missing: run `bash scripts/setup.sh` "
                    "(apt-get install pocketsphinx-testdata)")
    samples, rate = sf.read(str(SOURCE), dtype="float64", start=int(START_S * RATE), frames=int(SECONDS * RATE))
    assert rate == RATE
    return samples


def write_variants(folder: Path) -> dict[str, Variant]:
    """The excerpt as every variant (name -> Variant), each checked to be the container it is meant to be."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, (args, container, subtype, rate, channels) in FFMPEG.items():
        path = folder / f"{name}.wav"
        subprocess.run([ffmpeg(), "-nostdin", "-v", "error", "-y", "-ss", str(START_S), "-t", str(SECONDS), "-i",
                        str(SOURCE), *args, str(path)], check=True, timeout=60)
        out[name] = Variant(name, path, "ffmpeg", container, subtype, rate, channels)
    excerpt = source_excerpt()
    for name, (container, subtype) in SOUNDFILE.items():
        path = folder / f"{name}.wav"
        sf.write(str(path), excerpt, RATE, format=container, subtype=subtype)
        out[name] = Variant(name, path, "soundfile", container, subtype, RATE, 1)
    for variant in out.values():
        info = sf.info(str(variant.path))
        assert (info.format, info.subtype, info.samplerate, info.channels) == \
            (variant.format, variant.subtype, variant.rate, variant.channels), (variant.name, info)
    return out


@pytest.fixture(scope="module")
def variants(tmp_path_factory) -> dict[str, Variant]:
    return write_variants(tmp_path_factory.mktemp("wav_family"))


def chunk_offsets(data: bytes) -> dict[bytes, int]:
    """Offset of each chunk header up to and including the data chunk."""
    out, pos = {}, 12
    while pos + 8 <= len(data):
        chunk_id, size = data[pos:pos + 4], struct.unpack_from("<I", data, pos + 4)[0]
        out.setdefault(chunk_id, pos)
        if chunk_id == b"data":
            break
        pos += 8 + size + (size & 1)
    return out


def data_extent(data: bytes) -> tuple[int, int]:
    """(first byte of the samples, their size in bytes), the size from ds64 where the data chunk defers to it."""
    offsets = chunk_offsets(data)
    pos = offsets[b"data"]
    size = struct.unpack_from("<I", data, pos + 4)[0]
    if data[:4] == b"RF64" and size == RF64_UNKNOWN:
        size = struct.unpack_from("<Q", data, offsets[b"ds64"] + 16)[0]
    return pos + 8, size


def refuses(data: bytes, match: str, error=InvalidAudio) -> None:
    """Every WAV entry point refuses ``data`` with ``error`` whose message matches ``match`` (``read_input_audio``
    decodes any container, so it is a WAV check only for bytes that start like one)."""
    checks = [validate_wav, inspect_wav, lambda d: validate_input_audio(d, "clip.wav")]
    if data[:4] in (b"RIFF", b"RF64"):
        checks.append(read_input_audio)
    for check in checks:
        with pytest.raises(error, match=match):
            check(data)


def test_the_tests_run_this_checkout():
    import clonebench

    assert Path(clonebench.__file__).resolve().is_relative_to(REPO / "src"), clonebench.__file__


def test_the_variants_cover_the_wav_family(variants):
    by_format = {f: sorted(v.subtype for v in variants.values() if v.format == f) for f in ("WAV", "WAVEX", "RF64")}
    assert set(by_format["WAVEX"]) == set(SUBTYPES) and set(by_format["RF64"]) == set(SUBTYPES)
    assert set(by_format["WAV"]) == set(SUBTYPES)
    assert {v.path.read_bytes()[:4] for v in variants.values() if v.format == "RF64"} == {b"RF64"}
    # what ffmpeg writes for 24-bit, float and above-48 kHz PCM is WAVE_FORMAT_EXTENSIBLE (format tag 0xFFFE)
    for name in ("ffmpeg-pcm_s24le", "ffmpeg-pcm_f32le", "ffmpeg-pcm_s16le-96k"):
        data = variants[name].path.read_bytes()
        assert struct.unpack_from("<H", data, chunk_offsets(data)[b"fmt "] + 8)[0] == 0xFFFE, name
    assert {v.rate for v in variants.values()} == {8_000, RATE, 48_000, 96_000}
    assert {v.channels for v in variants.values()} == {1, 2}


@pytest.mark.parametrize("name", NAMES)
def test_every_variant_is_accepted_and_decoded_as_soundfile_reads_it(variants, name):
    variant = variants[name]
    data = variant.path.read_bytes()
    expected, rate = sf.read(str(variant.path), dtype="float32", always_2d=True)
    info = validate_wav(data)
    assert (info.sample_rate, info.frames, info.channels, info.subtype) == \
        (rate, expected.shape[0], expected.shape[1], variant.subtype)
    assert info.duration_s == pytest.approx(SECONDS, abs=0.01)
    described, samples = inspect_wav(data)
    assert described == info and samples.dtype == np.float32
    np.testing.assert_array_equal(samples, expected)
    assert validate_input_audio(data, variant.path.name) == info
    assert validate_input_audio(data) == info
    read_info, read_samples = read_input_audio(data)
    assert read_info == info
    np.testing.assert_array_equal(read_samples, expected)
    assert np.abs(samples).max() > 0.05  # speech, not silence


@pytest.mark.parametrize("name", NAMES)
def test_a_variant_cut_short_in_its_data_is_refused(variants, name):
    data = variants[name].path.read_bytes()
    start, size = data_extent(data)
    for cut in (1, size // 2, size - 1):
        refuses(data[:start + size - cut], f"truncated WAV: data chunk declares {size} bytes, {size - cut} present")
    refuses(data[:start - 3], "no complete data chunk")  # cut inside the data chunk's header


@pytest.mark.parametrize("name", NAMES)
def test_a_header_claiming_far_more_data_than_present_is_refused_unread(variants, name, monkeypatch):
    """A bomb: the declared size (2 GiB in a RIFF data chunk, 1 TiB in an RF64 ds64 chunk) is refused from the
    header alone, before libsndfile opens anything."""
    data = bytearray(variants[name].path.read_bytes())
    offsets = chunk_offsets(bytes(data))
    if data[:4] == b"RF64":
        claimed = 1 << 40
        struct.pack_into("<QQ", data, offsets[b"ds64"] + 8, claimed + 100, claimed)  # riffSize, dataSize
    else:
        claimed = 0x7FFFFFF0
        struct.pack_into("<I", data, 4, 0xFFFFFFFF)
        struct.pack_into("<I", data, offsets[b"data"] + 4, claimed)

    def never(*args, **kwargs):
        raise AssertionError("libsndfile was asked to open a bomb")

    monkeypatch.setattr(audio_module.sf, "SoundFile", never)
    refuses(bytes(data), f"data chunk declares {claimed} bytes")


@pytest.mark.parametrize("name", RF64_NAMES)
def test_rf64_data_of_unknown_size_without_a_ds64_chunk_is_refused(variants, name):
    data = variants[name].path.read_bytes()
    ds64 = chunk_offsets(data)[b"ds64"]
    assert struct.unpack_from("<I", data, chunk_offsets(data)[b"data"] + 4)[0] == RF64_UNKNOWN
    renamed = data[:ds64] + b"JUNK" + data[ds64 + 4:]          # the ds64 chunk is there, but not as ds64
    size = struct.unpack_from("<I", data, ds64 + 4)[0]
    removed = data[:ds64] + data[ds64 + 8 + size:]              # no ds64 chunk at all
    for bad in (renamed, removed):
        refuses(bad, "RF64 data chunk without a ds64 chunk giving its size")
    refuses(data[:ds64 + 20], "RF64 file with a truncated ds64 chunk")


def _riff(form: bytes, *chunks: tuple[bytes, bytes]) -> bytes:
    body = form + b"".join(cid + struct.pack("<I", len(payload)) + payload + b"\0" * (len(payload) & 1)
                           for cid, payload in chunks)
    return b"RIFF" + struct.pack("<I", len(body)) + body


NOT_AUDIO = {
    "empty": b"",
    "html": b"<html><body>502 Bad Gateway</body></html>",
    "json": b'{"error": "model not loaded"}',
    "random": np.random.default_rng(7).integers(0, 256, 8192, dtype=np.uint8).tobytes(),
    "riff_avi": _riff(b"AVI ", (b"LIST", b"hdrl" + bytes(52))),
    "wave_without_fmt": _riff(b"WAVE", (b"data", bytes(range(200)))),
    "wave_without_data": _riff(b"WAVE", (b"fmt ", struct.pack("<HHIIHH", 1, 1, RATE, 2 * RATE, 2, 16))),
    "rf64_without_wave": b"RF64" + struct.pack("<I", RF64_UNKNOWN) + b"AVI " + bytes(64),
}


@pytest.mark.parametrize("name", sorted(NOT_AUDIO))
def test_bytes_that_are_not_audio_named_wav_are_refused(name):
    refuses(NOT_AUDIO[name], r"not a RIFF/WAVE|no complete data chunk|unreadable WAV")


def test_an_mp3_named_wav_is_refused(tmp_path):
    """MP3 bytes under a .wav name (with an ID3 tag, or bare frames), and MP3 inside a RIFF/WAVE (format tag 0x55):
    none is a WAV. The same MP3 bytes named .mp3 are a valid input recording."""
    with_tag = tmp_path / "clip.mp3"
    in_riff = tmp_path / "mp3-in-riff.wav"
    for out, extra in ((with_tag, []), (in_riff, ["-f", "wav"])):
        subprocess.run([ffmpeg(), "-nostdin", "-v", "error", "-y", "-t", "1.5", "-i", str(SOURCE), "-c:a",
                        "libmp3lame", *extra, str(out)], check=True, timeout=60)
    bare = io.BytesIO()
    sf.write(bare, source_excerpt(), RATE, format="MP3")
    for mp3 in (with_tag.read_bytes(), bare.getvalue()):
        refuses(mp3, "not a RIFF/WAVE or RF64 file")
        assert validate_input_audio(mp3, "clip.mp3").sample_rate == RATE
    assert sf.info(str(in_riff)).subtype == "MPEG_LAYER_III"
    refuses(in_riff.read_bytes(), "sample format MPEG_LAYER_III is neither PCM nor float")


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("name", FLOAT_NAMES)
def test_a_float_variant_holding_nan_or_inf_is_refused(variants, name, value):
    variant = variants[name]
    data = bytearray(variant.path.read_bytes())
    start, _ = data_extent(bytes(data))
    code, width = ("<d", 8) if variant.subtype == "DOUBLE" else ("<f", 4)
    struct.pack_into(code, data, start + 1000 * width * variant.channels + width * (variant.channels - 1), value)
    decoded, _ = sf.read(io.BytesIO(bytes(data)), dtype="float64", always_2d=True)
    assert (~np.isfinite(decoded)).sum() == 1  # soundfile reads the file: the sample itself is what is refused
    refuses(bytes(data), "1 sample\\(s\\) are NaN or infinite", NonFiniteAudio)
    with pytest.raises(InvalidAudio, match="NaN or infinite"):
        validate_input_audio(bytes(data), "clip.wav")


def test_a_streamed_wav_is_read_to_the_end_of_its_bytes(tmp_path):
    """ffmpeg writing to a pipe cannot seek back: it leaves the RIFF and data sizes at 0xFFFFFFFF ("until the end").
    That placeholder alone means the data runs to the end of the bytes received; the samples are what soundfile
    reads, and a streamed float clip is still checked for NaN."""
    source = tmp_path / "source.wav"
    sf.write(source, source_excerpt(), 16000, subtype="PCM_16")
    for codec in ("pcm_s16le", "pcm_f32le"):
        streamed = subprocess.run([ffmpeg(), "-loglevel", "error", "-i", str(source), "-c:a", codec, "-f", "wav",
                                   "pipe:1"], capture_output=True, check=True).stdout
        assert struct.unpack_from("<I", streamed, chunk_offsets(streamed)[b"data"] + 4)[0] == 0xFFFFFFFF
        info, samples = inspect_wav(streamed)
        expected, rate = sf.read(io.BytesIO(streamed), dtype="float32", always_2d=True)
        assert (info.sample_rate, info.frames) == (rate, len(expected)) and np.array_equal(samples, expected)
        assert validate_wav(streamed) == info
    bad = bytearray(subprocess.run([ffmpeg(), "-loglevel", "error", "-i", str(source), "-c:a", "pcm_f32le", "-f", "wav",
                                    "pipe:1"], capture_output=True, check=True).stdout)
    struct.pack_into("<f", bad, chunk_offsets(bytes(bad))[b"data"] + 8, float("nan"))
    refuses(bytes(bad), "NaN or infinite", NonFiniteAudio)
