"""Suite inputs: compressed references (CommonVoice French is MP3) are validated as the container their name says
and sent with its MIME type; protected-reference tasks say where their audio must be; the tasks suggested as
runnable have their anchors' and sources' inputs too."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest
import soundfile as sf

from clonebench.adversary.base import SynthesisInput
from clonebench.data.audio import InvalidAudio, validate_input_audio
from clonebench.suite.definition import load_suite
from clonebench.suite.inputs import SuiteInputError, load_task_samples, runnable


def _encoded(fmt: str, subtype: str) -> bytes:
    out = io.BytesIO()
    t = np.arange(8000) / 16000
    sf.write(out, (0.3 * np.sin(2 * np.pi * 220 * t)).astype("float32"), 16000, format=fmt, subtype=subtype)
    return out.getvalue()


def test_compressed_inputs_are_checked_as_the_container_their_name_says():
    mp3 = _encoded("MP3", "MPEG_LAYER_III")
    assert validate_input_audio(mp3, "audios/fr0038/common_voice_fr_1.mp3").frames > 0
    assert validate_input_audio(_encoded("FLAC", "PCM_16"), "x.flac").sample_rate == 16000
    with pytest.raises(InvalidAudio, match="not a RIFF/WAVE"):
        validate_input_audio(mp3, "named_as.wav")  # a .wav name must be a valid WAV
    with pytest.raises(InvalidAudio, match="container is WAV, but the file name says MP3"):
        validate_input_audio(_encoded("WAV", "PCM_16"), "x.mp3")
    with pytest.raises(InvalidAudio, match="unreadable MP3"):
        validate_input_audio(b"ID3" + b"\0" * 50, "x.mp3")


def test_references_are_sent_with_their_container_type():
    from clonebench.adversary.openai_speech import OpenAISpeech
    from clonebench.adversary.s2cpp_http import S2CppHTTP
    from clonebench.config.settings import read_settings
    from tests.conftest import compose

    mp3 = _encoded("MP3", "MPEG_LAYER_III")
    item = SynthesisInput("Bonjour.", "FR", mp3, "Salut.", 42, reference_container="MP3")
    for adversary, cls in (("openai_speech", OpenAISpeech), ("s2cpp_http", S2CppHTTP)):
        settings = read_settings(compose("demo", [f"adversary={adversary}"]), "t")
        request = cls(settings.client, settings.adversary_params).prepare(item)
        if adversary == "openai_speech":
            body = json.loads(request.content)
            assert body["ref_audio"] == "data:audio/mpeg;base64," + base64.b64encode(mp3).decode()
        else:
            assert b'filename="reference.mp3"' in request.content and b"Content-Type: audio/mpeg" in request.content
    assert SynthesisInput("a", "EN", b"", "b", None).reference_mime == "audio/wav"


def test_protected_reference_tasks_say_where_their_audio_must_be(tmp_path):
    suite = load_suite("core-v1", ["adv-spec"])
    with pytest.raises(SuiteInputError) as caught:
        load_task_samples(suite, tmp_path, 42)
    message = str(caught.value)
    assert "task adv-spec: 40 problem(s) (protected references: the files are named relative to" in message
    assert "clonebench does not run protection methods" in message
    assert f"'Protected_LibriTTS/spec/1995/1995_1826_000051_000001.wav' not found at {tmp_path.resolve()}/Protected_" \
           "LibriTTS/spec/1995/1995_1826_000051_000001.wav" in message
    assert "task adv-clean: 40 problem(s) (protected references" in message  # the anchor, added by the selection
    assert set(caught.value.problems) == {"adv-clean", "adv-spec"}


def test_suggested_tasks_have_their_anchor_and_source_inputs():
    suite = load_suite("core-v1", ["background", "compression-mp3-64k", "chinese"])
    assert runnable(suite, {"background", "chinese", "audioshift"}) == ["audioshift", "chinese",
                                                                         "compression-mp3-64k"]
    assert runnable(suite, {"background", "background-clean"}) == ["background-clean", "background"]
