#!/usr/bin/env python
"""The serving client's own overhead, per chunk and per request, printed (no goal is asserted anywhere).

1. Per request: the same streamed answer read by the serving client (``serving.client.measure_request``: chunk
   notes, decoding, WAV validation, the player) and by a bare httpx stream read that only joins the bytes,
   alternately, against the stand-in in its own process answering at once (``--stream-profile`` with no delay).
   overhead = the median of the paired differences (client - bare), in ms and as a share of the answer's audio seconds.
2. Per chunk: the client's per-chunk work alone (decoder feed, the three notes) over many chunks, in microseconds,
   and as a share of the audio a chunk carries.

    python bench/serving_overhead.py [--requests 40] [--chunk-s 0.05] [--audio-s 4]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))


def fish_request(url: str):
    import ormsgpack

    from clonebench.adversary.base import PreparedRequest
    from clonebench.adversary.fish_s2_http import STREAM_RATE, pcm16_to_wav
    from clonebench.adversary.stream_decode import PcmStream
    from clonebench.standin.wavs import silence

    body = {"text": "The serving client's overhead.", "references": [{"audio": silence(3.0, 1), "text": "reference"}],
            "reference_id": None, "format": "wav", "streaming": True, "seed": 1, "max_new_tokens": 1024,
            "chunk_length": 200, "top_p": 0.8, "repetition_penalty": 1.1, "temperature": 0.8, "normalize": True,
            "use_memory_cache": "off"}
    return PreparedRequest("POST", f"{url}/v1/tts", ormsgpack.packb(body), {"Content-Type": "application/msgpack"},
                           stream=True, to_wav=pcm16_to_wav, decoder=lambda: PcmStream(STREAM_RATE, wav_header="maybe"))


async def per_request(url: str, requests: int) -> dict:
    from clonebench.adversary.bounded import bounded_client
    from clonebench.serving.client import RequestRecord, measure_request

    request = fish_request(url)
    client_times, bare_times, chunks, audio = [], [], [], 0.0
    async with bounded_client(1 << 30, timeout=60) as http:
        for i in range(requests + 2):  # the first two warm the connection and the server
            order = (True, False) if i % 2 else (False, True)  # alternate which read goes first
            for serving in order:
                started = time.perf_counter()
                if serving:
                    record = await measure_request(http, request, RequestRecord("s", "measured", 0.0), 60.0, 0.5)
                else:
                    async with http.stream("POST", request.url, content=request.content,
                                           headers=request.headers) as response:
                        b"".join([c async for c in response.aiter_bytes()])
                (client_times if serving else bare_times).append(time.perf_counter() - started)
            if i < 2:
                del client_times[-1], bare_times[-1]
                continue
            assert record.ok, record.error
            chunks.append(len(record.chunks["t_ms"]))
            audio = record.audio_s
    extra = statistics.median(c - b for c, b in zip(client_times, bare_times))  # paired, then the median
    return {"client_ms": statistics.median(client_times) * 1000, "bare_ms": statistics.median(bare_times) * 1000,
            "overhead_ms": extra * 1000, "chunks": statistics.median(chunks), "audio_s": audio,
            "share_of_audio": extra / audio}


def per_chunk(chunk_s: float, count: int = 20000) -> dict:
    from clonebench.adversary.stream_decode import PcmStream

    chunk = b"\x00\x01" * int(44100 * chunk_s)
    decoder, times, sizes, audio_ms = PcmStream(44100, wav_header="maybe"), [], [], []
    started = time.perf_counter()
    origin = started
    for _ in range(count):  # what measure_request does per chunk once the bytes are in
        now = time.perf_counter() - origin
        decoder.feed(chunk)
        times.append(round(now * 1000, 3))
        sizes.append(len(chunk))
        audio_ms.append(round(decoder.seconds * 1000, 3))
    each = (time.perf_counter() - started) / count
    return {"us_per_chunk": each * 1e6, "share_of_chunk_audio": each / chunk_s}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--chunk-s", type=float, default=0.05, help="audio seconds per streamed chunk")
    parser.add_argument("--audio-s", type=float, default=4.0, help="audio seconds per answer")
    args = parser.parse_args()
    from bench._standins import start_standin

    with tempfile.TemporaryDirectory() as work:
        process, url = start_standin(Path(work), "standin", "--tone", "--stream-profile",
                                     f"first=0,rtf=0,chunk={args.chunk_s},audio={args.audio_s}")
        try:
            request = asyncio.run(per_request(url, args.requests))
        finally:
            process.terminate()
            process.wait(10)
    chunk = per_chunk(args.chunk_s)
    print(f"per request ({args.requests} requests, {request['audio_s']:.2f} s answers in ~{request['chunks']:.0f} "
          f"chunks as received): serving client {request['client_ms']:.2f} ms vs bare httpx read "
          f"{request['bare_ms']:.2f} ms: overhead {request['overhead_ms']:.2f} ms per request "
          f"({request['share_of_audio']:.3%} of the answer's audio time)")
    print(f"per chunk ({args.chunk_s:g} s of 44.1 kHz s16le per chunk): {chunk['us_per_chunk']:.2f} us "
          f"({chunk['share_of_chunk_audio']:.4%} of the chunk's audio time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
