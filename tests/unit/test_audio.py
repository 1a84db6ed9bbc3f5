import io
import struct

import numpy as np
import pytest
import soundfile as sf

from clonebench.data.audio import InvalidAudio, validate_wav


def wav(samples, rate=16000, subtype="PCM_16", channels=1):
    out = io.BytesIO()
    data = np.asarray(samples, dtype=np.float32)
    if channels > 1:
        data = np.stack([data] * channels, axis=1)
    sf.write(out, data, rate, subtype=subtype, format="WAV")
    return out.getvalue()


def test_accepts_pcm_and_float():
    assert validate_wav(wav(np.zeros(100))).frames == 100
    info = validate_wav(wav(np.zeros(50), subtype="FLOAT", channels=2))
    assert (info.subtype, info.channels) == ("FLOAT", 2)


@pytest.mark.parametrize("data, message", [
    (b"", "not a RIFF/WAVE"),
    (b"<html>oops</html>", "not a RIFF/WAVE"),
    (b"RIFF\x00\x00\x00\x00WAVEfmt ", "no complete data chunk"),
])
def test_rejects_non_wav(data, message):
    with pytest.raises(InvalidAudio, match=message):
        validate_wav(data)


def test_rejects_nan_and_empty_and_truncated():
    nan = np.zeros(10, dtype=np.float32)
    nan[3] = np.nan
    with pytest.raises(InvalidAudio, match="NaN or infinite"):
        validate_wav(wav(nan, subtype="FLOAT"))
    with pytest.raises(InvalidAudio, match="no audio frames"):
        validate_wav(wav(np.zeros(0)))
    full = wav(np.zeros(1000))
    with pytest.raises(InvalidAudio, match="truncated"):
        validate_wav(full[: len(full) // 2])


def test_rejects_non_pcm_subtype():
    data = bytearray(wav(np.zeros(100)))
    # patch the fmt chunk's format tag to 0x0055 (MPEG Layer 3)
    fmt = data.index(b"fmt ")
    struct.pack_into("<H", data, fmt + 8, 0x0055)
    with pytest.raises(InvalidAudio):
        validate_wav(bytes(data))
