"""The stand-in Fish server: a real HTTP/1.1 server on loopback speaking the Fish api_server contract.

It is a TEST AND DEMO SERVER, NOT A CLONING MODEL: it speaks the requested text with eSpeak NG in a
voice whose pitch and rate follow the reference recording (see ``voice.py``). ``/v1/health`` is
static, as Fish's is. It injects faults on request (``faults.py``) and records the sha256 of every
request body it receives, so tests can prove that retries resent identical bytes. With ``behaviours``
(fractions, or a ``behave`` fault) it answers like a failing cloning model (``behaviours.py``: loop, truncate,
prompt_copy, silence), applied in ``Handler._synthesize``, through which every protocol's audio passes.

Built on the standard library's ``http.server`` rather than an ASGI framework because the faults
need the raw socket: resetting a connection after reading a request, or cutting a chunked body short.
Control routes (tests only, no key): ``GET /_standin/received``, ``POST /_standin/faults``
(``{"faults": [...], "sticky": {...}|null, "clear": bool}``), ``POST /_standin/reset``. Which code answers which
protocol's routes is ``routing.py``'s table; this module holds what every protocol shares.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
import socket
import struct
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from clonebench.data.audio import InvalidAudio
from clonebench.standin import behaviours as behaviours_module
from clonebench.standin import hostile, openai_api, s2cpp_api, voice, wavs
from clonebench.standin.chunked import write_chunked
from clonebench.standin.faults import FaultPlan
from clonebench.standin.fish_api import HTTPFailure, stored_references
from clonebench.standin.routing import FAMILIES, PROTOCOLS, control, dispatch
from clonebench.standin.stream_profile import InFlight, Layout, StreamProfile, scripted_answer

log = logging.getLogger("clonebench.standin")


class StandinServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], api_key: str | None = None, latency: float = 0.0,
                 serial: bool = True, references_dir: Path | None = None, protocol: str = "fish",
                 tone: bool = False, ignore_seed: bool = False, vllm_build: str = "after-6553",
                 behaviours: dict[str, float] | str | None = None, stream_profile: StreamProfile | None = None):
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol {protocol!r}: one of {sorted(PROTOCOLS)}")
        if vllm_build not in openai_api.BUILDS:
            raise ValueError(f"vllm_build {vllm_build!r}: one of {openai_api.BUILDS}")
        self.protocol = protocol
        # failure behaviours by fraction ({"loop": 0.25} or "loop=0.25,..."), picked per text/reference hash
        self.behaviours = behaviours_module.parse_behaviours(behaviours) if isinstance(behaviours, str) \
            else behaviours_module.check_fractions(behaviours)
        self.vllm_build = vllm_build  # the vLLM-Omni build the openai protocol behaves as (openai_api.BUILDS)
        self.tone = tone  # load benchmarks: a cheap tone instead of eSpeak speech
        self.ignore_seed = ignore_seed  # accept `seed` and ignore it, as some vLLM-Omni versions do
        if not ipaddress.ip_address(socket.gethostbyname(address[0])).is_loopback:
            raise ValueError(f"the stand-in listens on loopback only, not {address[0]}")
        super().__init__(address, Handler)
        self.api_key, self.latency, self.references_dir = api_key, latency, references_dir
        self.faults = FaultPlan()
        self.received: list[dict] = []
        self.received_lock = threading.Lock()
        # a scripted streaming profile times every answer itself (stream_profile.py), contention included: no lock
        self.stream_profile, self.in_flight = stream_profile, InFlight()
        self.synthesis_lock = threading.Lock() if serial and stream_profile is None else None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def record(self, path: str, body: bytes, content_type: str | None) -> dict:
        entry = {"path": path, "sha256": hashlib.sha256(body).hexdigest(), "bytes": len(body),
                 "content_type": content_type, "ts": time.time()}
        with self.received_lock:
            self.received.append(entry)
        return entry


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: StandinServer

    def setup(self):
        super().setup()
        # like uvicorn: no Nagle, else the small last chunk waits for a delayed ACK (~40 ms stalls)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt, *args):  # route http.server's access log to logging
        log.debug("%s " + fmt, self.address_string(), *args)

    # -- plumbing ------------------------------------------------------------------------------
    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: bytes, content_type: str, headers: dict | None = None,
              chunked: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            write_chunked(self, body, 65536)
        else:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def _json(self, status: int, payload, headers: dict | None = None) -> None:
        text = json.dumps(payload, default=lambda o: f"<{len(o)} bytes>" if isinstance(o, (bytes, bytearray)) else str(o))
        self._send(status, text.encode(), "application/json", headers)

    def _envelope(self, status: int, message: str | None, headers: dict | None = None) -> None:
        self._json(status, {"statusCode": status, "message": message, "error": HTTPStatus(status).phrase}, headers)

    def _reset(self) -> None:
        """Abort the connection with an RST, sending no response."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    # -- routing -------------------------------------------------------------------------------
    def do_GET(self):
        self._route("GET")

    def do_POST(self):
        self._route("POST")

    def do_DELETE(self):
        self._route("DELETE")

    def _fail(self, exc: HTTPFailure) -> None:
        if exc.raw is not None:
            self._send(exc.status, exc.raw, exc.content_type, exc.headers)
        elif exc.status == 422:
            self._json(422, exc.body, exc.headers)
        else:
            self._envelope(exc.status, exc.message, exc.headers)

    def _route(self, method: str) -> None:
        path = self.path.split("?")[0]
        body = self._read_body() if method in ("POST", "DELETE") else b""
        try:
            if path.startswith("/_standin/"):
                return control(self, method, path, body)
            entry = self.server.record(path, body, self.headers.get("Content-Type")) if method == "POST" else {}
            self.script = None
            if method == "POST" and self.server.stream_profile is not None:
                token = self.server.in_flight.enter()  # (when it was read, its slowdown, count): scripted answers
                self.script = (time.perf_counter(), self.server.stream_profile.factor(token[0]), token[0], token)
                try:
                    return dispatch(self, method, path, body, entry)
                finally:
                    self.server.in_flight.leave(token)
            return dispatch(self, method, path, body, entry)
        except HTTPFailure as exc:
            self._fail(exc)
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            log.debug("client went away: %r", exc)
            self.close_connection = True

    # -- synthesis (/v1/tts, /generate, /v1/audio/speech) ----------------------------------------
    def _status_fault(self, fault: dict) -> HTTPFailure:
        code, message = int(fault.get("code", 503)), fault.get("message", "injected fault")
        failure = FAMILIES[self.server.protocol].status(code, message)
        if "retry_after" in fault:
            failure.headers.update({"Retry-After": str(fault["retry_after"])})
        return failure

    def _answer(self, body: bytes, content_type: str, headers: dict, request: dict, audio: bytes,
                streamed: str | None) -> None:
        """The 200 answer: at once, or on the stand-in's scripted streaming profile (``--stream-profile``)."""
        if self.script is None:
            if streamed == "sse":
                body = openai_api.sse(body, request, audio)
            return self._send(200, body, content_type, headers, chunked=streamed is not None or
                              self.server.protocol == "fish")
        framing = openai_api.sse_framing(request, audio) if streamed == "sse" else streamed
        scripted_answer(self, request["text"], body, Layout.of_wav_pcm16(audio, body), content_type, headers, framing)

    def _answer_request(self, request: dict) -> None:
        fault = self.server.faults.next() or {}
        kind = fault.get("kind")
        if kind == "reset":
            return self._reset()
        if kind in hostile.KINDS:
            return hostile.answer(self, fault, lambda: self._synthesize(request, ignore_reference=False, fault=fault))
        if kind == "delay":
            time.sleep(float(fault.get("seconds", 1.0)))
        if kind == "status":
            raise self._status_fault(fault)
        if kind == "not_wav":
            return self._send(200, b"<html>upstream proxy error</html>", "audio/wav", chunked=True)
        if self.server.ignore_seed:
            request = {**request, "seed": None}
        if self.server.protocol == "openai":
            request = {**request, "seed": openai_api.synthesis_seed(request)}
        audio = self._synthesize(request, ignore_reference=kind == "ignore_reference", fault=fault)
        if kind == "nan":
            audio = wavs.nan_wav()
        if kind == "wav_truncated_header":
            audio = audio[: len(audio) // 2]
        if kind == "truncate" and request.get("stream") == "sse":  # vLLM-Omni's events: an error event, not a cut
            return self._send(200, openai_api.failed_sse(request, audio), "text/event-stream", chunked=True)
        if kind == "truncate":
            if request.get("streaming"):
                audio = wavs.pcm_only(audio)
            self.send_response(200)
            self.send_header("Content-Type", "audio/wav")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(f"{len(audio):X}\r\n".encode() + audio[: len(audio) // 2])
            self.wfile.flush()
            self.close_connection = True  # closed cleanly mid-chunk: the client sees a body cut short
            return self.connection.shutdown(socket.SHUT_WR)
        FAMILIES[self.server.protocol].answer(self, request, audio, kind)

    def _synthesize(self, request: dict, ignore_reference: bool, fault: dict | None = None) -> bytes:
        """The answer's audio (a WAV at ``voice.OUTPUT_RATE``) for every protocol, failure behaviour applied."""
        if self.server.protocol == "fish" and request["format"] in ("pcm", "opus"):
            raise HTTPFailure(500, "Failed to generate speech")
        script, profile = getattr(self, "script", None), self.server.stream_profile
        if script is not None and profile.drift and script[2] > 1 and request.get("seed") is not None:
            request = {**request, "seed": (request["seed"] * 1009 + script[2]) % 2**31}  # batched: other audio
        references = request["references"]
        if request.get("reference_id") is not None:
            references = stored_references(self.server.references_dir, request["reference_id"])
        audio = self._synthesize_speech(request, references, ignore_reference)
        reference_audio = references[0]["audio"] if references else b""
        reference_audio = reference_audio.encode() if isinstance(reference_audio, str) else bytes(reference_audio)
        if fault and fault.get("kind") == "behave":
            behaviour = fault["as"]
        else:
            behaviour = behaviours_module.pick(request["text"], hashlib.sha256(reference_audio).hexdigest(),
                                               self.server.behaviours)
        if behaviour is None:
            return audio
        log.debug("failure behaviour %s for %r", behaviour, request["text"][:40])
        return behaviours_module.apply(behaviour, audio, reference_audio, request.get("seed"))

    def _synthesize_speech(self, request: dict, references: list[dict], ignore_reference: bool) -> bytes:
        style = dict(voice.DEFAULT_STYLE)
        if references and not ignore_reference and self.server.tone:
            style["pitch"] = int.from_bytes(hashlib.sha256(references[0]["audio"]).digest()[:2], "big") % 100
        elif references and not ignore_reference:
            try:
                style = voice.reference_style(references[0]["audio"], references[0]["text"])
            except InvalidAudio as exc:
                if not request.get("ignore_bad_reference"):
                    raise HTTPFailure(500, "Failed to generate speech") from exc
                log.warning("reference audio cannot be decoded, ignored (as s2.cpp does): %s", exc)
        lock = self.server.synthesis_lock
        if lock is None:
            return self._speak(request, style)
        if self.server.protocol == "s2cpp":  # one synthesis at a time and no queue: busy is 503
            if not lock.acquire(blocking=False):
                raise s2cpp_api.text_error(503, "Server is busy with another synthesis.")
            try:
                return self._speak(request, style)
            finally:
                lock.release()
        with lock:  # a Fish worker (and here vLLM) synthesizes one request at a time, queueing the rest
            return self._speak(request, style)

    def _speak(self, request: dict, style: dict) -> bytes:
        if self.server.latency:
            time.sleep(self.server.latency)
        if not request["text"].strip():  # s2.cpp synthesizes empty text (200): a breath of silence here
            return wavs.silence(0.25, request["seed"])
        if self.server.tone:
            return wavs.tone(request, style, self.server.stream_profile.audio if self.server.stream_profile else 0.0)
        try:
            return voice.synthesize(request["text"], voice.text_language(request["text"]), style, request["seed"])
        except voice.SpeechError as exc:
            raise HTTPFailure(500, f"No audio generated: {exc}") from exc
