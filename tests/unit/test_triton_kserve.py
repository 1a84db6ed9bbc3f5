"""Triton KServe v2 adversary: request building, answer normalisation, error reading; the seed facts of adversaries."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

import numpy as np
import pytest
import soundfile as sf

from clonebench.adversary.base import SynthesisInput
from clonebench.adversary.registry import adversary_class
from clonebench.adversary.triton_kserve import (
    TritonKServe,
    describe_error,
    split_endpoint,
    waveform_to_wav,
)
from clonebench.core.errors import ConfigError
from clonebench.data.audio import InvalidAudio, validate_wav

URL = "http://127.0.0.1:8000/v2/models/cosyvoice2/infer"
PARAMS = {"model": "cosyvoice2", "model_version": None, "reference_sample_rate": 16000, "output_sample_rate": 24000,
          "max_abs": 2.0}


def adversary(url=URL, **params):
    client = SimpleNamespace(endpoint_url=url, endpoint_urls=[url], measure="quality")
    return TritonKServe(client, {**PARAMS, **params})


def wav_bytes(rate=22050, seconds=0.5, channels=1):
    t = np.arange(int(rate * seconds)) / rate
    tone = (0.25 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    out = io.BytesIO()
    sf.write(out, np.stack([tone] * channels, axis=1) if channels > 1 else tone, rate, format="WAV")
    return out.getvalue()


def item(audio=None):
    return SynthesisInput("Target words.", "en", audio or wav_bytes(), "Reference words.", seed=42)


def answer(data, datatype="FP32", shape=None, model="cosyvoice2"):
    shape = [1, len(data)] if shape is None else shape
    return json.dumps({"model_name": model, "model_version": "1",
                       "outputs": [{"name": "waveform", "datatype": datatype, "shape": shape, "data": data}]}).encode()


def test_the_request_holds_the_four_inputs_at_the_reference_rate_and_no_seed():
    request = adversary().prepare(item(wav_bytes(rate=22050, seconds=0.5, channels=2)))
    assert request.url == URL and request.headers == {"Content-Type": "application/json"}
    body = json.loads(request.content)
    inputs = {i["name"]: i for i in body["inputs"]}
    assert [i["name"] for i in body["inputs"]] == ["reference_wav", "reference_wav_len", "reference_text",
                                                  "target_text"]
    assert inputs["reference_wav"]["datatype"] == "FP32" and inputs["reference_wav"]["shape"] == [1, 8000]
    assert len(inputs["reference_wav"]["data"]) == 8000  # 0.5 s at 16 kHz, down-mixed to mono
    assert inputs["reference_wav_len"] == {"name": "reference_wav_len", "shape": [1, 1], "datatype": "INT32",
                                           "data": [[8000]]}
    assert inputs["reference_text"]["data"] == ["Reference words."] and inputs["reference_text"]["datatype"] == "BYTES"
    assert inputs["target_text"]["data"] == ["Target words."] and inputs["target_text"]["shape"] == [1, 1]
    assert "seed" not in request.content.decode()
    assert adversary().prepare(item()).content == adversary().prepare(item()).content  # deterministic bytes


def test_the_reference_rate_is_configurable_and_kept_when_equal():
    body = json.loads(adversary(reference_sample_rate=24000).prepare(item(wav_bytes(rate=24000, seconds=0.25))).content)
    assert body["inputs"][1]["data"] == [[6000]]


def test_a_waveform_becomes_a_float_wav_at_the_output_rate():
    data = [0.0, 0.5, -0.5, 1.2] * 10
    for shape in ([1, 40], [40]):
        wav = waveform_to_wav(answer(data, shape=shape), 24000, 2.0, "cosyvoice2")
        info = validate_wav(wav)
        samples, rate = sf.read(io.BytesIO(wav), dtype="float32")
        assert rate == 24000 and info.subtype == "FLOAT" and info.channels == 1
        assert np.allclose(samples, data)
    nested = json.dumps({"outputs": [{"name": "waveform", "datatype": "FP32", "shape": [1, 3],
                                      "data": [[0.1, 0.2, 0.3]]}]}).encode()
    assert validate_wav(waveform_to_wav(nested, 16000, 1.0)).frames == 3


@pytest.mark.parametrize("body, match", [
    (b"<html>", "not JSON"),
    (b'{"outputs": 1}', "no 'outputs'"),
    (answer([0.1], model="spark_tts"), "from model 'spark_tts'"),
    (json.dumps({"outputs": [{"name": "audio", "datatype": "FP32", "shape": [1], "data": [0.1]}]}).encode(),
     "expected one output 'waveform'"),
    (answer([1, 2], datatype="INT16"), "datatype 'INT16'"),
    (answer([0.1, 0.2], shape=[2, 1]), r"shape \[2, 1\]"),
    (answer([0.1, 0.2], shape=[1, 3]), "but 2 values"),
    (answer([], shape=[1, 0]), "empty"),
    (answer(["x"]), "not a flat list of numbers"),
    (b'{"outputs": [{"name": "waveform", "datatype": "FP32", "shape": [1, 2], "data": [0.1, NaN]}]}', "NaN"),
    (answer([0.1, 3.0]), "peaks at 3"),
])
def test_bad_answers_are_invalid_audio(body, match):
    with pytest.raises(InvalidAudio, match=match):
        waveform_to_wav(body, 24000, 2.0, "cosyvoice2")


def test_error_json_is_classified():
    assert "model not found" in describe_error(404, b'{"error": "Request for unknown model: \'x\' is not found"}')
    assert "decoupled" in describe_error(501, b'{"error": "HTTP end point doesn\'t support models with decoupled"}')
    assert "the model failed" in describe_error(500, b'{"error": "boom"}')
    assert "refused" in describe_error(400, b'{"error": "bad"}')
    assert describe_error(500, b"plain text") is None


def test_endpoint_and_model_must_agree():
    assert split_endpoint("http://h:1/p/v2/models/m/versions/2/infer") == (split_endpoint(
        "http://h:1/p/v2/models/m/infer")[0], "m", "2")
    with pytest.raises(ConfigError, match="names model 'spark_tts'"):
        adversary("http://127.0.0.1:8000/v2/models/spark_tts/infer")
    with pytest.raises(ConfigError, match="not a Triton infer URL"):
        adversary("http://127.0.0.1:8000/v1/tts")
    assert adversary("http://h:1/v2/models/cosyvoice2/versions/3/infer", model_version="3")


def test_seed_facts_of_every_adversary():
    triton = adversary()
    assert TritonKServe.accepts_seed is False and triton.seed_policy(42) == "not_supported"
    assert triton.seeded(42) is False and triton.request_fingerprint_fields()["seed_supported"] is False
    openai = adversary_class("openai_speech")
    assert openai.accepts_seed is True and openai.seed_ignored is False
    speaker = openai(SimpleNamespace(endpoint_url="http://h/v1/audio/speech", measure="quality"), {})
    assert speaker.seeded(42) is True and speaker.seeded(None) is False

    class Ignores(openai):
        seed_ignored = True

    assert Ignores(SimpleNamespace(), {}).seeded(42) is False
    assert Ignores(SimpleNamespace(), {}).seed_policy(42) != "not_supported"  # still sent, recorded as ignored
    assert adversary_class("s2cpp_http")(SimpleNamespace(), {}).seeded(42) is False


def test_compare_and_the_report_mark_unseeded_servers():
    from clonebench.report.paper import footnotes, run_rows
    from clonebench.report.systems import System, unseeded_notes
    from clonebench.report.tables import UNSEEDED_NOTE, ResultTable

    summary = {"sim": {"mean": 0.5, "ci": None, "n_valid": 1, "n_requested": 1}}
    seeded = ResultTable("fish", [], status="complete", seed_policy="per_sample_seed(run_seed+source_index)", seed=42,
                         seeded_recorded=True, metrics_summary=summary)
    triton = ResultTable("triton", [], status="complete", seed_policy="not_supported", seed=42, seed_honoured=False,
                         seeded_recorded=False, metrics_summary=summary)
    ignored = ResultTable("sglang", [], status="complete", seed_policy="per_sample_seed(run_seed+source_index)",
                          seed=42, seeded_recorded=False, metrics_summary=summary)
    plain = ResultTable("own", [], status="complete", seed_policy="unseeded", seed=None, seeded_recorded=False)
    assert seeded.seeded and not triton.seeded and not ignored.seeded and not plain.seeded
    assert [t.unseeded_server for t in (seeded, triton, ignored, plain)] == [False, True, True, False]
    notes = unseeded_notes([System("fish", [seeded]), System("triton", [triton]), System("sglang", [ignored])])
    assert notes == [f"triton: {UNSEEDED_NOTE}", f"sglang: {UNSEEDED_NOTE}"]
    rows = run_rows([seeded, triton])
    assert rows[0]["name"] == "fish" and rows[1]["name"] == "triton (no seed)"
    assert f"triton: {UNSEEDED_NOTE}" in footnotes(rows)


def test_the_docs_page_names_the_commits_read_and_does_not_contradict_its_real_server_check():
    """docs/servers-triton.md (issue #42 item 8): every recipe commit the adapter was written from is on the page,
    and a page that reports a run against a real tritonserver does not also say it was never checked."""
    import re
    from pathlib import Path

    from clonebench.adversary import triton_kserve

    page = (Path(__file__).resolve().parents[2] / "docs" / "servers-triton.md").read_text(encoding="utf-8")
    commits = re.findall(r"\b[0-9a-f]{40}\b", triton_kserve.__doc__)
    assert len(commits) == 4 and all(c[:12] in page for c in commits), commits
    assert "## Checked against a real Triton server" in page
    assert not re.search(r"not (yet )?checked against a running", page, re.IGNORECASE)
    assert "reference_sample_rate=24000" in page  # F5-TTS's reference rate at its head
