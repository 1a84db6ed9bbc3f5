"""Hostile answers of the stand-in: what a broken or malicious server sends back (tests and the chaos test only).

Each is a fault kind (queued like the others, see ``faults.py``) answered instead of a synthesis:

- ``oversized``: 200 declaring ``bytes`` (default 2 GiB) of WAV in Content-Length, streamed as fast as read;
- ``endless``: 200 chunked WAV that never ends (stops after ``bytes``, default 64 GiB, or when the client leaves);
- ``drip``: a valid WAV answered one byte every ``interval`` seconds (default 1.0): each read is quick, the
  whole answer takes for ever;
- ``compressed_bomb``: 200 with ``Content-Encoding: gzip`` (or ``encoding``: ``deflate``) whose body inflates
  to ``inflated`` bytes (default 2 GiB) of zeros, compressed on the fly;
- ``bad_header``: a malformed header, ``variant``: ``retry_after`` (429 with ``Retry-After: <value>``, default
  "soon"), ``content_length`` (200 with ``Content-Length: 12abc``), ``encoding`` (a WAV sent with
  ``Content-Encoding: <value>``, default ``br``), ``control_chars`` (a header value holding an ANSI escape);
- ``ansi``: status ``code`` (default 500) whose text body clears the screen, returns the carriage and prints
  a fake success line;
- ``echo_headers``: status ``code`` (default 500) whose JSON body echoes the request headers (the
  Authorization header among them), as some debugging proxies do.

Every writer stops when the client goes away (the server catches the broken pipe).
"""

from __future__ import annotations

import json
import struct
import time
import zlib
from collections.abc import Callable

KINDS = frozenset({"oversized", "endless", "drip", "compressed_bomb", "bad_header", "ansi", "echo_headers"})
BLOCK = 1 << 20
ANSI_BODY = ("\x1b[2J\x1b[H\x1b[32mALL 16 SAMPLES GENERATED OK\x1b[0m\r\x08\x08 upstream failed\x07\n"
             "\x1b]0;owned\x07")


def wav_header(data_bytes: int, rate: int = 48_000, channels: int = 2) -> bytes:
    """A float32 WAV header declaring ``data_bytes`` of samples (capped at what RIFF sizes can say)."""
    data_bytes = min(data_bytes, 0xFFFFFFFF - 36)
    fmt = struct.pack("<HHIIHH", 3, channels, rate, rate * channels * 4, channels * 4, 32)
    return (b"RIFF" + struct.pack("<I", 36 + data_bytes) + b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt
            + b"data" + struct.pack("<I", data_bytes))


def _head(handler, status: int, headers: dict[str, str]) -> None:
    handler.send_response(status)
    for key, value in headers.items():
        handler.send_header(key, value)
    handler.end_headers()


def _chunk(handler, data: bytes) -> None:
    handler.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")


def _zeros(total: int):
    block = bytes(BLOCK)
    while total > 0:
        yield block[: min(total, BLOCK)]
        total -= BLOCK


def answer(handler, fault: dict, synthesize: Callable[[], bytes]) -> None:
    """Send the hostile answer ``fault`` asks for on ``handler`` (a ``BaseHTTPRequestHandler``)."""
    kind = fault["kind"]
    handler.close_connection = True
    if kind == "oversized":
        size = int(fault.get("bytes", 2 << 30))
        header = wav_header(size - 44)
        _head(handler, 200, {"Content-Type": "audio/wav", "Content-Length": str(size)})
        handler.wfile.write(header)
        for block in _zeros(size - len(header)):
            handler.wfile.write(block)
    elif kind == "endless":
        _head(handler, 200, {"Content-Type": "audio/wav", "Transfer-Encoding": "chunked"})
        _chunk(handler, wav_header(0xFFFFFFFF))
        for block in _zeros(int(fault.get("bytes", 64 << 30))):
            _chunk(handler, block)
        handler.wfile.write(b"0\r\n\r\n")
    elif kind == "drip":
        body, interval = synthesize(), float(fault.get("interval", 1.0))
        _head(handler, 200, {"Content-Type": "audio/wav", "Content-Length": str(len(body))})
        for i in range(len(body)):
            handler.wfile.write(body[i:i + 1])
            handler.wfile.flush()
            time.sleep(interval)
    elif kind == "compressed_bomb":
        _compressed_bomb(handler, fault.get("encoding", "gzip"), int(fault.get("inflated", 2 << 30)))
    elif kind == "bad_header":
        _bad_header(handler, fault, synthesize)
    elif kind == "ansi":
        body = ANSI_BODY.encode()
        _head(handler, int(fault.get("code", 500)), {"Content-Type": "text/plain", "Content-Length": str(len(body))})
        handler.wfile.write(body)
    elif kind == "echo_headers":
        body = json.dumps({"error": "upstream failed", "request_headers": dict(handler.headers.items())}).encode()
        _head(handler, int(fault.get("code", 500)), {"Content-Type": "application/json",
                                                    "Content-Length": str(len(body))})
        handler.wfile.write(body)
    else:  # pragma: no cover - FaultPlan refuses unknown kinds
        raise ValueError(f"unknown hostile answer {kind!r}")
    handler.wfile.flush()


def _compressed_bomb(handler, encoding: str, inflated: int) -> None:
    wbits = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}[encoding]
    compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
    _head(handler, 200, {"Content-Type": "audio/wav", "Content-Encoding": encoding, "Transfer-Encoding": "chunked"})
    pending = compressor.compress(wav_header(inflated - 44))
    for block in _zeros(inflated - 44):
        pending += compressor.compress(block)
        if len(pending) >= 4096:
            _chunk(handler, pending)
            pending = b""
    pending += compressor.flush()
    _chunk(handler, pending)
    handler.wfile.write(b"0\r\n\r\n")


def _bad_header(handler, fault: dict, synthesize: Callable[[], bytes]) -> None:
    variant = fault.get("variant", "retry_after")
    if variant == "retry_after":
        body = b'{"error": "slow down"}'
        _head(handler, 429, {"Retry-After": str(fault.get("value", "soon")), "Content-Type": "application/json",
                             "Content-Length": str(len(body))})
        handler.wfile.write(body)
    elif variant == "content_length":
        _head(handler, 200, {"Content-Type": "audio/wav", "Content-Length": "12abc"})
        handler.wfile.write(synthesize())
    elif variant == "encoding":
        body = synthesize()
        _head(handler, 200, {"Content-Type": "audio/wav", "Content-Encoding": str(fault.get("value", "br")),
                             "Content-Length": str(len(body))})
        handler.wfile.write(body)
    elif variant == "control_chars":
        body = synthesize()
        handler.send_response(200)
        handler._headers_buffer.append(b"X-Note: \x1b[2Jcleared\r\n")  # raw: no header check on the way
        handler.send_header("Content-Type", "audio/wav")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
    else:
        raise ValueError(f"bad_header variant {variant!r}: one of retry_after, content_length, encoding, control_chars")
