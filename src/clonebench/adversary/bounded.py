"""Bounded responses: no answer a server sends can make the client hold more than ``max_response_bytes``.

Every client the harness opens (``bounded_client``) asks for ``Accept-Encoding: identity`` and checks each
response as it arrives, before its body is read:

- a declared ``Content-Length`` above the cap is refused at once, without reading the body;
- the body is counted while it streams (raw bytes, and decoded bytes when the server compresses anyway),
  and reading stops with ``ResponseTooLarge`` as soon as either count passes the cap, so an endless chunked
  body or a gzip/deflate bomb costs at most the cap plus one network read;
- ``gzip`` and ``deflate`` are decoded here with a bounded decoder (``zlib`` with ``max_length``); any other
  encoding (``br``, ``zstd``, a chain of several) is refused with ``ResponseRefused``, since the client asked
  for none.

Both errors are ``httpx.TransportError``s, so readiness probes report them like any transport failure, and
``transport.py`` records them as permanent failures. The default cap, 230,465,536 bytes, is the longest
plausible WAV answer: 10 minutes of 48 kHz 32-bit float stereo (600 x 48,000 x 4 x 2 = 230,400,000 bytes of
samples) plus 64 KiB for headers.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

DEFAULT_MAX_RESPONSE_BYTES = 600 * 48_000 * 4 * 2 + 65_536
KEY = "adversary.max_response_bytes"


class ResponseRefused(httpx.TransportError):
    """The server's answer breaks a rule the client sets (its encoding): permanent, never retried."""

    error_class = "ResponseRefused"


class ResponseTooLarge(ResponseRefused):
    """The answer is larger than ``adversary.max_response_bytes``; ``bytes_read``: body bytes received by then."""

    error_class = "ResponseTooLarge"
    bytes_read = 0


def _too_large(what: str, limit: int, request: httpx.Request) -> ResponseTooLarge:
    return ResponseTooLarge(f"response refused: {what} exceeds {KEY}={limit} bytes (raise {KEY} if the server "
                            "really sends audio this long)", request=request)


class _Inflater:
    """gzip/deflate decoding that never produces more than ``limit`` bytes in all."""

    def __init__(self, encoding: str, limit: int, request: httpx.Request):
        self.encoding, self.limit, self.request = encoding, limit, request
        self.produced = 0
        self.first = True
        wbits = 16 + zlib.MAX_WBITS if encoding in ("gzip", "x-gzip") else zlib.MAX_WBITS
        self.decoder = zlib.decompressobj(wbits)

    def feed(self, data: bytes) -> bytes:
        if self.first and self.encoding == "deflate" and data:
            self.first = False
            try:  # "deflate" is zlib-wrapped by the RFC, raw deflate in practice: try the RFC first, as httpx does
                probe = zlib.decompressobj(zlib.MAX_WBITS)
                probe.decompress(data[:2])
            except zlib.error:
                self.decoder = zlib.decompressobj(-zlib.MAX_WBITS)
        out, pending = [], data
        try:
            while pending and not self.decoder.eof:
                piece = self.decoder.decompress(pending, self.limit - self.produced + 1)
                self.produced += len(piece)
                if self.produced > self.limit:
                    raise _too_large(f"the {self.encoding}-decoded body", self.limit, self.request)
                out.append(piece)
                pending = self.decoder.unconsumed_tail
        except zlib.error as exc:
            raise ResponseRefused(f"response refused: corrupt {self.encoding} body ({exc})",
                                  request=self.request) from exc
        return b"".join(out)


class BoundedStream(httpx.AsyncByteStream):
    """The response stream, counted (and decoded when compressed) as it is read."""

    def __init__(self, inner: httpx.AsyncByteStream, limit: int, request: httpx.Request, encoding: str | None):
        self.inner, self.limit, self.request = inner, limit, request
        self.inflater = _Inflater(encoding, limit, request) if encoding else None
        self.raw = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            self.raw += len(chunk)
            try:
                if self.raw > self.limit:
                    raise _too_large(f"the body (more than {self.raw} bytes read)", self.limit, self.request)
                if self.inflater is not None:
                    chunk = self.inflater.feed(chunk)
            except ResponseTooLarge as exc:
                exc.bytes_read = self.raw
                raise
            if chunk:
                yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


def bound_response(limit: int):
    """An httpx response hook that enforces ``limit`` on every response of the client."""

    async def hook(response: httpx.Response) -> None:
        request = response.request
        declared = response.headers.get("content-length", "").strip()
        if declared.isdigit() and int(declared) > limit:
            raise _too_large(f"the declared Content-Length {int(declared)}", limit, request)
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
            raise ResponseRefused(f"response refused: Content-Encoding {encoding[:60]!r} (the client asked for "
                                  "identity and decodes only gzip and deflate)", request=request)
        decoded = encoding not in ("", "identity")
        if decoded:  # decoded here, bounded: httpx must not decode it again
            del response.headers["content-encoding"]
            if "content-length" in response.headers:
                del response.headers["content-length"]
        response.stream = BoundedStream(response.stream, limit, request, encoding if decoded else None)

    return hook


def bounded_client(max_response_bytes: int, **kwargs: Any) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` whose every response is bounded by ``max_response_bytes``."""
    headers = {"Accept-Encoding": "identity", **(kwargs.pop("headers", None) or {})}
    hooks = dict(kwargs.pop("event_hooks", None) or {})
    hooks["response"] = [*hooks.get("response", []), bound_response(max_response_bytes)]
    return httpx.AsyncClient(headers=headers, event_hooks=hooks, **kwargs)
