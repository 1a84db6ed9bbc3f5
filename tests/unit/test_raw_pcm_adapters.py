"""CosyVoice and Zonos 2 adapters without a server: request bytes (multipart with a content-derived boundary, JSON),
language codes, seeds, and the normalisation of header-less PCM answers to WAV (refusing what is not audio)."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest
import soundfile as sf

from clonebench.adversary.base import SynthesisInput
from clonebench.adversary.raw_pcm import FLOAT_TOLERANCE, fastapi_error, multipart_form, pcm_to_wav
from clonebench.adversary.registry import adversary_class
from clonebench.config.settings import read_settings
from clonebench.core.errors import ConfigError
from clonebench.data.audio import InvalidAudio, validate_wav
from clonebench.standin import cosyvoice_api
from tests.conftest import compose

NEEDS = ["dataset.use_hf_dataset=false", "+dataset.manifest_filename=m.json"]
REFERENCE = b"RIFF\x00\x00\x00\x00WAVEfake reference bytes"


def adversary(name: str, *overrides: str):
    settings = read_settings(compose("vc", [f"adversary={name}", *NEEDS, *overrides]), "t")
    return adversary_class(settings.client.protocol)(settings.client, settings.adversary_params)


def item(text="Good morning.", language="EN", seed=7, reference=REFERENCE):
    return SynthesisInput(text=text, language=language, reference_audio=reference,
                          reference_text="Hello there.", seed=seed)


# ---- CosyVoice -----------------------------------------------------------------------------------------------------

def test_cosyvoice_request_is_a_multipart_form_with_a_stable_boundary():
    cosy = adversary("cosyvoice_http")
    first, again = cosy.prepare(item()), cosy.prepare(item())
    assert first.content == again.content and first.sha256 == again.sha256  # a retry resends these exact bytes
    assert first.url.endswith("/inference_zero_shot") and first.method == "POST"
    assert first.headers["Content-Type"].startswith("multipart/form-data; boundary=clonebench-")
    fields = cosyvoice_api.form(first.headers["Content-Type"], first.content)
    assert fields["tts_text"] == (b"Good morning.", None)
    assert fields["prompt_text"] == (b"Hello there.", None)
    assert fields["prompt_wav"] == (REFERENCE, "prompt.wav")
    assert b"seed" not in first.content  # CosyVoice has no seed field
    other = cosy.prepare(item(text="Another line."))
    assert other.headers["Content-Type"] != first.headers["Content-Type"]  # the boundary follows the content


def test_cosyvoice_records_no_seed_and_prefixes_cosyvoice3_prompts():
    cosy = adversary("cosyvoice_http", "adversary.prompt_prefix='You are a helpful assistant.<|endofprompt|>'")
    assert cosy.seed_policy(42) == "not_supported" and not cosy.seeded(42)
    request = cosy.prepare(item(text="中文的句子。"))
    fields = cosyvoice_api.form(request.headers["Content-Type"], request.content)
    assert fields["prompt_text"][0].decode() == "You are a helpful assistant.<|endofprompt|>Hello there."
    assert fields["tts_text"][0].decode() == "中文的句子。"
    assert cosy.reference_rule().max_s == 30.0
    assert adversary("cosyvoice_http", "adversary.reference_duration_check=false").reference_rule() is None


def test_multipart_boundary_never_occurs_in_the_content():
    import hashlib

    data = b"payload "
    for _ in range(3):  # make the data hold the boundary its own hash would give (a fixed point is not needed:
        digest = hashlib.sha256(b"Bf\0f.wav\0audio/wav\0" + data).hexdigest()  # any clash must be avoided)
        clash = b"--clonebench-" + digest[:32].encode()
        _, content_type = multipart_form([], [("f", "f.wav", "audio/wav", data)])
        assert b"--" + content_type.split("boundary=")[1].encode() not in data
        data += clash
    body, content_type = multipart_form([], [("f", "f.wav", "audio/wav", data)])
    assert cosyvoice_api.form(content_type, body)["f"] == (data, "f.wav")


def test_cosyvoice_answer_is_int16_at_the_configured_rate():
    samples = (np.sin(np.arange(2400) / 5) * 12000).astype("<i2")
    wav = adversary("cosyvoice_http").prepare(item()).to_wav(samples.tobytes())
    info = validate_wav(wav)
    assert info.sample_rate == 24000 and info.frames == 2400
    assert (sf.read(io.BytesIO(wav), dtype="int16")[0] == samples).all()
    wav = adversary("cosyvoice_http", "adversary.sample_rate=22050").prepare(item()).to_wav(samples.tobytes())
    assert validate_wav(wav).sample_rate == 22050


@pytest.mark.parametrize("body, reason", [
    (b"", "the body is empty"),
    (b"\x01\x02\x03", "not whole s16le samples"),
    (b'{"detail":"boom"}', "the body is text"),
    (b"Internal Server Error", "the body is text"),
    (b"RIFF\x24\x00\x00\x00WAVEfmt ", "is a WAV file"),
])
def test_what_is_not_pcm_is_refused_with_its_reason(body, reason):
    with pytest.raises(InvalidAudio, match=reason):
        pcm_to_wav(body, sample_rate=24000, sample_format="s16le", server="CosyVoice")


def test_fastapi_error_bodies_are_read():
    assert "tts_text: Field required" in fastapi_error(422, json.dumps({"detail": [
        {"type": "missing", "loc": ["body", "tts_text"], "msg": "Field required"}]}).encode())
    assert fastapi_error(400, b'{"detail": "Unsupported language code"}').endswith("Unsupported language code")
    assert "plain 500" in fastapi_error(500, b"Internal Server Error")
    assert fastapi_error(502, b"<html>bad gateway</html>") is None


# ---- Zonos 2 -------------------------------------------------------------------------------------------------------

def test_zonos_request_is_json_with_base64_reference_seed_and_language():
    zonos = adversary("zonos2_http")
    request = zonos.prepare(item(language="EN", seed=43))
    assert request.content == zonos.prepare(item(language="EN", seed=43)).content
    body = json.loads(request.content)
    assert body["language"] == "en_us" and body["seed"] == 43 and body["stream"] is True
    assert base64.b64decode(body["speaker_audio_base64"], validate=True) == REFERENCE
    assert body["temperature"] == 1.15 and body["topk"] == 106 and body["max_tokens"] is None
    assert "reference_text" not in request.content.decode() and "Hello there." not in request.content.decode()
    assert zonos.seeded(42) and zonos.seed_policy(42) != "not_supported"
    assert json.loads(zonos.prepare(item(language="zh")).content)["language"] == "cmn"
    assert json.loads(zonos.prepare(item(language="pt-BR")).content)["language"] == "pt_br"


def test_zonos_language_is_mapped_fixed_or_refused():
    fixed = adversary("zonos2_http", "adversary.language=en_gb")
    assert json.loads(fixed.prepare(item(language="EN")).content)["language"] == "en_gb"
    with pytest.raises(ConfigError, match="Zonos 2 has no language code for 'NL'"):
        adversary("zonos2_http").prepare(item(language="NL"))
    with pytest.raises(ConfigError, match="adversary.language='english'"):
        adversary("zonos2_http", "adversary.language=english")


def test_zonos_answer_is_float32_range_checked():
    to_wav = adversary("zonos2_http").prepare(item()).to_wav
    samples = (np.sin(np.arange(4410) / 7) * 0.5).astype("<f4")
    wav = to_wav(samples.tobytes())
    info = validate_wav(wav)
    assert info.sample_rate == 44100 and info.frames == 4410
    assert np.allclose(sf.read(io.BytesIO(wav), dtype="float32")[0], samples)
    to_wav(np.array([1.0 + FLOAT_TOLERANCE / 2, -1.0], dtype="<f4").tobytes())  # rounding noise is kept (clipped)
    with pytest.raises(InvalidAudio, match="beyond"):
        to_wav(np.array([0.1, 3.5], dtype="<f4").tobytes())
    with pytest.raises(InvalidAudio, match="NaN or infinite"):
        to_wav(np.array([0.1, np.nan, np.inf], dtype="<f4").tobytes())
    with pytest.raises(InvalidAudio, match="not whole f32le samples"):
        to_wav(samples.tobytes()[:-2])
    with pytest.raises(InvalidAudio, match="empty"):
        to_wav(b"")
    # int16 speech read as float32 is mostly out of range: a wrong sample_format fails, it does not pass silently
    with pytest.raises(InvalidAudio):
        to_wav((np.sin(np.arange(4410) / 7) * 20000).astype("<i2").tobytes())
