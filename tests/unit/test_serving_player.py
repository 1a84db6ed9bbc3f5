"""The simulated 1x player, the streamed-audio decoders and the serving percentiles, against hand-worked cases."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest
import soundfile as sf

from clonebench.adversary.stream_decode import (
    PcmStream,
    SglangSseStream,
    StreamNotAudio,
    events_to_wav,
    finalize_streamed_wav,
)
from clonebench.data.audio import InvalidAudio, validate_wav
from clonebench.serving.player import play
from clonebench.serving.summary import capacity
from clonebench.serving.sweep import poisson_arrivals
from clonebench.stats.quantiles import percentile_cis


def test_a_stream_ahead_of_the_player_never_stalls():
    result = play([(0.2, 1.0), (0.9, 2.0), (1.5, 3.0)], prebuffer_s=0.0)
    assert (result.start_s, result.stalls, result.stalled_s, result.first_stall_s) == (0.2, 0, 0.0, None)


def test_late_chunks_stall_by_their_lateness():
    # 1 s chunks every 1.5 s: playback starts at 0.5, runs out at 1.5 (chunk 2 at 2.0), then at 3.0 (chunk 3 at 3.5)
    result = play([(0.5, 1.0), (2.0, 2.0), (3.5, 3.0)], prebuffer_s=0.0)
    assert result.stalls == 2 and result.stalled_s == pytest.approx(1.0) and result.first_stall_s == pytest.approx(1.5)
    assert result.starved


def test_the_prebuffer_delays_the_start_and_absorbs_a_late_chunk():
    # 2 s buffered at 2.0 last until 4.0: the third chunk (3.5) is in time
    result = play([(0.5, 1.0), (2.0, 2.0), (3.5, 3.0)], prebuffer_s=2.0)
    assert result.start_s == 2.0 and result.stalls == 0 and result.stalled_s == 0.0
    # an answer shorter than the pre-buffer starts when it is complete
    assert play([(0.1, 0.3), (0.2, 0.6)], prebuffer_s=5.0).start_s == 0.2


def test_gaps_under_a_millisecond_are_not_stalls_and_silence_is_none():
    assert play([(0.0, 1.0), (1.0005, 2.0)], 0.0).stalls == 0
    assert play([(0.1, 0.0)], 0.0) is None


def _wav(seconds: float, rate: int = 24000, subtype: str = "PCM_16") -> bytes:
    out = io.BytesIO()
    sf.write(out, np.zeros(int(seconds * rate), dtype=np.float32), rate, subtype=subtype, format="WAV")
    return out.getvalue()


@pytest.mark.parametrize("subtype, width", [("PCM_16", 2), ("FLOAT", 4)])
def test_a_wav_stream_counts_no_audio_until_its_header_is_past(subtype, width):
    body = _wav(0.5, subtype=subtype)
    decoder = PcmStream(44100, wav_header="always")
    counts = [decoder.feed(body[i:i + 7]) for i in range(0, len(body), 7)]
    header = len(body) - 12000 * width
    first = next(i for i, c in enumerate(counts) if c)
    assert (first + 1) * 7 >= header + width and decoder.rate == 24000 and decoder.samples == 12000
    assert decoder.seconds == pytest.approx(0.5)


def test_headerless_pcm_counts_whole_samples_and_a_non_wav_is_refused():
    decoder = PcmStream(44100, wav_header="maybe")
    assert [decoder.feed(b"\x01"), decoder.feed(b"\x02" * 12), decoder.feed(b"\x03")] == [0, 6, 7]
    with pytest.raises(StreamNotAudio):
        PcmStream(44100, wav_header="always").feed(b"<html>proxy error</html>")


def _sglang_events(pcm: bytes, step: int, rate: int = 24000, last: bool = True) -> bytes:
    """SGLang-Omni's speech stream as its _speech_stream writes it (2489a10): pcm chunks, a final event, [DONE]."""
    events = [{"object": "audio.speech.chunk", "index": i // step, "finish_reason": None,
               "audio": {"data": base64.b64encode(pcm[i:i + step]).decode(), "format": "pcm",
                         "mime_type": "audio/pcm", "sample_rate": rate}} for i in range(0, len(pcm), step)]
    if last:
        events.append({"object": "audio.speech.chunk", "index": len(events), "audio": None, "finish_reason": "stop"})
    tail = b"data: [DONE]\r\n\r\n" if last else b""
    return b"".join(f"data: {json.dumps(e)}\r\n\r\n".encode() for e in events) + tail


def test_sglang_audio_chunks_split_anywhere_take_the_events_rate_and_must_end():
    pcm = np.arange(300, dtype="<i2").tobytes()
    events = _sglang_events(pcm, 200)
    decoder = SglangSseStream(PcmStream(44100))
    counts = [decoder.feed(events[i:i + 11]) for i in range(0, len(events), 11)]
    assert counts[-1] == 300 and counts[0] == 0 and sorted(counts) == counts and decoder.done
    assert decoder.rate == 24000 and decoder.seconds == pytest.approx(300 / 24000)  # the events' rate, not the guess
    wav = events_to_wav(SglangSseStream(PcmStream(44100, collect=True)), events, "SGLang-Omni")
    samples, rate = sf.read(io.BytesIO(wav), dtype="int16")
    assert rate == 24000 and samples.tolist() == list(range(300))
    with pytest.raises(InvalidAudio, match="without its final event"):  # a pipeline failure after the 200: cut short
        events_to_wav(SglangSseStream(PcmStream(44100, collect=True)), _sglang_events(pcm, 200, last=False), "S")
    wav_chunk = events.replace(b'"format": "pcm"', b'"format": "wav"', 1)
    with pytest.raises(StreamNotAudio, match="not pcm"):  # each wav chunk is a whole file: never concatenated
        SglangSseStream(PcmStream(44100)).feed(wav_chunk)


def test_a_streamed_wav_header_with_placeholder_sizes_is_finalized():
    """s2.cpp's chunked stream: a 16-bit header whose sizes are 0x7FFFFFF0, then PCM as it is made."""
    from clonebench.standin.s2cpp_api import streaming_header

    pcm = np.arange(500, dtype="<i2").tobytes()
    body = streaming_header(44100) + pcm
    decoder = PcmStream(22050, wav_header="always")
    assert decoder.feed(body[:44]) == 0 and decoder.feed(body[44:45]) == 0 and decoder.feed(body[45:]) == 500
    assert decoder.rate == 44100
    info = validate_wav(finalize_streamed_wav(body))
    assert info.frames == 500 and info.sample_rate == 44100
    assert finalize_streamed_wav(_wav(0.1)) == _wav(0.1)  # a finished WAV is left as it is
    with pytest.raises(InvalidAudio, match="mid-sample"):
        finalize_streamed_wav(body[:-1])


def test_percentile_intervals_cover_the_point_and_poisson_gaps_have_the_rate():
    values = list(np.random.default_rng(1).exponential(0.3, size=200))
    cis = percentile_cis(values, (50.0, 95.0), 500, 0.95, seed=3)
    for cell in cis.values():
        assert cell["ci"][0] <= cell["value"] <= cell["ci"][1]
    assert cis["p50"]["value"] == pytest.approx(float(np.median(values)))
    arrivals = poisson_arrivals(4.0, 4001, seed=7)
    assert arrivals[0] == 0.0 and 4000 / arrivals[-1] == pytest.approx(4.0, rel=0.05)


def test_capacity_is_the_last_level_before_the_first_miss():
    class S:
        ttfa_budget_s, starvation_bound = 0.5, 0.0

    def level(n, p95, starved, errors=0):
        return {"mode": "closed", "level": n, "summary": {"errors": errors, "ok": 4, "requests": 4,
                                                           "ttfa_s": {"p95": {"value": p95}}, "starvation_rate": starved}}
    levels = [level(1, 0.1, 0.0), level(2, 0.3, 0.0), level(4, 0.4, 0.25), level(8, 0.2, 0.0)]
    found = capacity(levels, S, "closed")
    assert found["capacity"] == 2 and "starved" in found["limited_by"]
    assert capacity([level(1, 0.9, 0.0)], S, "closed")["capacity"] is None
    assert capacity([level(1, 0.1, 0.0, errors=1)], S, "closed")["capacity"] is None


def test_the_scripted_schedule():
    """standin/stream_profile.py: the truth the integration tests measure against."""
    from clonebench.standin.stream_profile import chunk_frames, departures, parse_profile

    fixed = parse_profile("first=0.2,rtf=0.5,slowdown=0.5,chunk=0.5")
    assert chunk_frames(1100, 1000, "any text", fixed) == [500, 500, 100]
    assert fixed.factor(1) == 1.0 and fixed.factor(3) == 2.0
    # chunk 0 at f * first, then rtf * f seconds per audio second of each later chunk
    assert departures([500, 500, 100], 1000, fixed, 2.0, seed=1) == pytest.approx([0.4, 0.9, 1.0])
    sentence = parse_profile("schedule=sentence")
    # one chunk per sentence, sized by its share of the characters (10 + 20 + 10 of 40)
    assert chunk_frames(4000, 1000, "Aaaaaaaaa. Bbbbbbbbbbbbbbbbbbb! Cccccccccc", sentence) == [1000, 2000, 1000]
    jittered = parse_profile("first=0.1,rtf=0,chunk=0.1,jitter=0.05")
    times = departures([100] * 20, 1000, jittered, 1.0, seed=3)
    assert all(0.1 <= t < 0.15 for t in times) and times == sorted(times)  # never before the previous chunk
    with pytest.raises(ValueError, match="unknown stream profile field"):
        parse_profile("latency=1")
