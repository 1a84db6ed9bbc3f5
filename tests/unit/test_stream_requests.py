"""What timing and serving runs ask each streaming server for (no server): vLLM-Omni's raw audio or events,
SGLang-Omni's events of pcm chunks, s2.cpp's chunked stream; and a quality run's request left as it was."""

from __future__ import annotations

import json

from clonebench.adversary.stream_decode import PcmStream, SglangSseStream, SseAudioStream
from clonebench.standin import s2cpp_api
from tests.unit.test_raw_pcm_adapters import adversary, item


def test_vllm_omni_streams_raw_audio_or_events_and_a_quality_fingerprint_is_unchanged():
    quality, raw = adversary("openai_speech"), adversary("openai_speech", "adversary.measure=ttfb")
    sse = adversary("openai_speech", "adversary.measure=ttfb", "adversary.stream_format=sse")
    body = json.loads(sse.prepare(item()).content)
    assert "stream" not in body and (body["stream_format"], body["response_format"]) == ("sse", "pcm")  # #4490
    assert isinstance(sse.prepare(item()).decoder(), SseAudioStream)
    raw_body = json.loads(raw.prepare(item()).content)
    assert (raw_body["stream"], raw_body["stream_format"]) == (True, "audio")  # stream=true: builds before #4490
    assert isinstance(raw.prepare(item()).decoder(), PcmStream)
    assert "stream" not in json.loads(quality.prepare(item()).content)
    # the key changes only the request it changes: a quality run's (and raw audio's) fingerprint is the one before it
    assert "stream_format" not in quality.request_fingerprint_fields()
    assert "stream_format" not in raw.request_fingerprint_fields()
    assert sse.request_fingerprint_fields()["stream_format"] == "sse"


def test_sglang_omni_asks_for_events_of_pcm_chunks_only_when_timed(tmp_path):
    share = f"adversary.reference_share.local_dir={tmp_path}"
    quality = adversary("sglang_omni_speech", share)
    timed = adversary("sglang_omni_speech", share, "adversary.measure=ttfb")
    assert json.loads(quality.prepare(item()).content)["stream"] is False and not quality.prepare(item()).stream
    request = timed.prepare(item())
    body = json.loads(request.content)
    assert (body["stream"], body["response_format"], request.stream) == (True, "pcm", True)
    assert isinstance(request.decoder(), SglangSseStream)


def test_s2cpp_asks_for_its_chunked_stream_only_when_timed():
    quality, timed = adversary("s2cpp_http"), adversary("s2cpp_http", "adversary.measure=ttfb")
    for client, streamed in ((quality, False), (timed, True)):
        request = client.prepare(item())
        params = json.loads(s2cpp_api.parts(request.headers["Content-Type"], request.content)["params"][0])
        assert (params.get("stream", False), params.get("chunked", False), request.stream) == (streamed,) * 3
        assert params.get("output_format", "wav") == "wav"  # chunked pcm would wait for 3 s of audio
