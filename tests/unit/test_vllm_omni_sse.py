"""vLLM-Omni's speech Server-Sent Events, as upstream writes them, through the harness's decoder and the stand-in.

The upstream shape (vllm-project/vllm-omni ``docs/serving/speech_api.md`` at 078de2d1, "SSE stream";
``tests/entrypoints/openai/test_serving_speech.py`` at 5eba539f, ``_assert_sse_audio_response`` and
``test_sse_emits_error_event_on_generator_failure``; ``protocol/audio.py`` at 0131cb55, ``is_sse_stream``): each
event is an ``event: <type>`` line and one JSON ``data:`` line; ``speech.audio.delta`` carries
``{"type", "audio": <base64>, "response_format"}``; the last event is ``speech.audio.done`` with ``usage``
(input/output/total tokens and ``input_token_details``), or, when generation fails after the 200,
``speech.audio.error`` with ``error: {message, type, param, code}``; no ``data: [DONE]``. The JSON spacing below
is Python's ``json.dumps`` default: upstream's is not pinned (the decoder does not depend on it).
"""

from __future__ import annotations

import io

import pytest
import soundfile as sf

from clonebench.adversary.stream_decode import PcmStream, SseAudioStream, StreamNotAudio, events_to_wav
from clonebench.data.audio import InvalidAudio
from clonebench.standin import openai_api

PCM = b"\x01\x00\xff\xff\x00\x01\x00\x00"  # s16le samples 1, -1, 256, 0
DELTAS = (b'event: speech.audio.delta\ndata: {"type": "speech.audio.delta", "audio": "AQD//w==", '
          b'"response_format": "pcm"}\n\n'
          b'event: speech.audio.delta\ndata: {"type": "speech.audio.delta", "audio": "AAEAAA==", '
          b'"response_format": "pcm"}\n\n')
DONE = (b'event: speech.audio.done\ndata: {"type": "speech.audio.done", "usage": {"input_tokens": 2, '
        b'"output_tokens": 0, "total_tokens": 2, "input_token_details": {"text_tokens": 2, "audio_tokens": 0}}}\n\n')
ERROR = (b'event: speech.audio.error\ndata: {"type": "speech.audio.error", "error": {"message": '
         b'"Speech generation failed: boom", "type": "server_error", "param": null, "code": 500}}\n\n')


def _decoder(collect: bool = False) -> SseAudioStream:
    return SseAudioStream(PcmStream(44100, collect=collect))


def test_upstream_events_split_anywhere_decode_to_the_pcm():
    for size in (1, 7, 13, len(DELTAS + DONE)):
        decoder = _decoder()
        body = DELTAS + DONE
        counts = [decoder.feed(body[i:i + size]) for i in range(0, len(body), size)]
        assert counts[-1] == 4 and sorted(counts) == counts and decoder.done
    samples, rate = sf.read(io.BytesIO(events_to_wav(_decoder(collect=True), DELTAS + DONE, "vLLM-Omni")),
                            dtype="int16")
    assert rate == 44100 and samples.tolist() == [1, -1, 256, 0]  # no event names the rate: Fish's 44.1 kHz


def test_an_error_event_after_the_200_fails_the_stream_with_its_message():
    decoder = _decoder()
    assert decoder.feed(DELTAS[:len(DELTAS) // 2 + 60]) == 2
    with pytest.raises(StreamNotAudio, match="speech.audio.error: 'Speech generation failed: boom'"):
        decoder.feed(DELTAS[len(DELTAS) // 2 + 60:] + ERROR)


def test_the_end_of_the_stream_is_speech_audio_done_only():
    with pytest.raises(InvalidAudio, match="without its final event"):  # cut short: the body just ended
        events_to_wav(_decoder(collect=True), DELTAS, "vLLM-Omni")
    with pytest.raises(InvalidAudio, match="without its final event"):  # [DONE] is SGLang-Omni's, ends nothing here
        events_to_wav(_decoder(collect=True), DELTAS + b"data: [DONE]\n\n", "vLLM-Omni")


def test_the_first_sse_version_s_delta_field_is_read():
    """#4490's merged description (2026-06-16): the chunk in ``delta``; ``audio`` since (078de2d1)."""
    decoder = _decoder()
    assert decoder.feed(DELTAS.replace(b'"audio": ', b'"delta": ') + DONE) == 4 and decoder.done


def test_a_delta_in_another_format_than_pcm_is_refused():
    with pytest.raises(StreamNotAudio, match="not pcm"):
        _decoder().feed(DELTAS.replace(b'"response_format": "pcm"', b'"response_format": "wav"', 1))


def test_the_stand_in_writes_the_upstream_events_byte_for_byte():
    request = {"format": "pcm", "text": "Two words"}
    assert openai_api.sse(PCM, request, b"", chunk=4) == DELTAS + DONE
    framing = openai_api.sse_framing(request, b"")
    assert framing(PCM[:4], False) + framing(PCM[4:], True) == DELTAS + DONE
    wav = io.BytesIO()
    sf.write(wav, [0.0] * 400, 44100, format="WAV", subtype="PCM_16")
    failed = openai_api.failed_sse(request, wav.getvalue())  # the stand-in's truncate fault: an upstream failure
    assert failed.endswith(b"\n\n") and failed.split(b"\n\n")[-2].startswith(b"event: speech.audio.error\ndata: ")
    with pytest.raises(StreamNotAudio, match="injected fault"):
        _decoder().feed(failed)
