"""A chunked HTTP/1.1 body written by hand on a stand-in's handler, whole or cut short: the emulations need the
framing under their control (a body cut inside a chunk, the connection shut without the last chunk), which
``http.server`` does not offer. The caller has sent the status line and headers, including
``Transfer-Encoding: chunked``, and ended them."""

from __future__ import annotations

import socket


def write_chunked(handler, body: bytes, size: int, cut_at: int | None = None) -> None:
    """``body`` in chunks of ``size`` bytes and the last chunk; ``cut_at``: instead, declare one chunk of the whole
    body, send its first ``cut_at`` bytes and shut the connection (a server failing mid-stream)."""
    if cut_at is not None:  # an empty body cut: no chunk at all (uvicorn, when the app raises before its first)
        handler.wfile.write(f"{len(body):X}\r\n".encode() + body[:cut_at] if body else b"")
        handler.wfile.flush()
        handler.close_connection = True
        handler.connection.shutdown(socket.SHUT_WR)
        return
    for start in range(0, len(body), size):
        piece = body[start:start + size]
        handler.wfile.write(f"{len(piece):X}\r\n".encode() + piece + b"\r\n")
    handler.wfile.write(b"0\r\n\r\n")
