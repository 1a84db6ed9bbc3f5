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
(``{"faults": [...], "sticky": {...}|null, "clear": bool}``), ``POST /_standin/reset``.
"""

from __future__ import annotations

import hashlib
import io
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

import soundfile as sf

from clonebench.data.audio import InvalidAudio
from clonebench.standin import behaviours as behaviours_module
from clonebench.standin import (
    cosyvoice_api,
    gpt_sovits_api,
    hostile,
    openai_api,
    s2cpp_api,
    sglang_omni_api,
    triton_api,
    voice,
    wavs,
    zonos2_api,
)
from clonebench.standin.chunked import write_chunked
from clonebench.standin.faults import FaultPlan
from clonebench.standin.stream_profile import InFlight, Layout, StreamProfile, scripted_answer
from clonebench.standin.fish_api import (
    HTTPFailure,
    parse_body,
    reference_id_valid,
    validate_tts,
)

log = logging.getLogger("clonebench.standin")
ROUTES = {"/v1/health": ("GET", "POST"), "/v1/tts": ("POST",)}
PROTOCOL_ROUTES = {"fish": ROUTES, "s2cpp": s2cpp_api.ROUTES, "openai": openai_api.ROUTES}
PROTOCOL_ROUTES["triton"] = triton_api.ROUTES  # dynamic paths: triton_api.route serves them
DELEGATED = {"cosyvoice": cosyvoice_api, "zonos2": zonos2_api}  # modules that serve every route (.route)
PROTOCOL_ROUTES.update({name: module.ROUTES for name, module in DELEGATED.items()})
PROTOCOL_ROUTES["gpt_sovits"] = gpt_sovits_api.ROUTES  # gpt_sovits_api.route serves them
DELEGATED["sglang_omni"] = sglang_omni_api  # server-side reference paths, read in references_dir
PROTOCOL_ROUTES["sglang_omni"] = sglang_omni_api.ROUTES
AUDIO_EXTENSIONS = (".mp3", ".wav", ".flac", ".ogg", ".m4a", ".wma", ".aac", ".aiff", ".aif", ".aifc")


class StandinServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], api_key: str | None = None, latency: float = 0.0,
                 serial: bool = True, references_dir: Path | None = None, protocol: str = "fish",
                 tone: bool = False, ignore_seed: bool = False, vllm_build: str = "after-6553",
                 behaviours: dict[str, float] | str | None = None, stream_profile: StreamProfile | None = None):
        if protocol not in PROTOCOL_ROUTES:
            raise ValueError(f"protocol {protocol!r}: one of {sorted(PROTOCOL_ROUTES)}")
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
        protocol = self.server.protocol
        try:
            if path.startswith("/_standin/"):
                return self._control(method, path, body)
            entry = self.server.record(path, body, self.headers.get("Content-Type")) if method == "POST" else {}
            self.script = None
            if method == "POST" and self.server.stream_profile is not None:
                token = self.server.in_flight.enter()  # (when it was read, its slowdown, count): scripted answers
                self.script = (time.perf_counter(), self.server.stream_profile.factor(token[0]), token[0], token)
                try:
                    return self._dispatch(method, path, body, entry)
                finally:
                    self.server.in_flight.leave(token)
            return self._dispatch(method, path, body, entry)
        except HTTPFailure as exc:
            self._fail(exc)
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            log.debug("client went away: %r", exc)
            self.close_connection = True

    def _dispatch(self, method: str, path: str, body: bytes, entry: dict) -> None:
        protocol = self.server.protocol
        if protocol == "triton":
            return triton_api.route(self, method, path, body)
        if protocol in DELEGATED:
            return DELEGATED[protocol].route(self, method, path, body)
        if protocol == "gpt_sovits":  # server-side reference paths, read in references_dir
            return gpt_sovits_api.route(self, method, path, body)
        routes = PROTOCOL_ROUTES[protocol]
        if path not in routes:
            raise {"fish": HTTPFailure(404), "s2cpp": s2cpp_api.not_found(),
                   "openai": openai_api.error(404, f"Not Found: {path}")}[protocol]
        if method not in routes[path]:
            if protocol == "fish":
                raise HTTPFailure(405, None, headers={"Allow": ", ".join(routes[path])})
            raise openai_api.error(405, "Method Not Allowed") if protocol == "openai" else s2cpp_api.not_found()
        if protocol == "fish" and self.server.api_key and \
                self.headers.get("Authorization") != f"Bearer {self.server.api_key}":
            raise HTTPFailure(401, "Invalid or missing API key")
        if path in ("/v1/health", "/health"):
            return self._json(200, {"status": "healthy" if protocol == "openai" else "ok"})
        if path == "/v1/models":
            return self._send(200, openai_api.models(), "application/json")
        started = time.perf_counter()
        self._synthesis(body)
        entry["handled_s"] = time.perf_counter() - started  # server-side time, for overhead benchmarks

    def _control(self, method: str, path: str, body: bytes) -> None:
        if path == "/_standin/received" and method == "GET":
            with self.server.received_lock:
                return self._json(200, list(self.server.received))
        if path == "/_standin/faults" and method == "POST":
            spec = json.loads(body or b"{}")
            if spec.get("clear"):
                self.server.faults.clear()
            try:
                self.server.faults.add(spec.get("faults", []))
            except ValueError as exc:
                return self._envelope(400, str(exc))
            try:
                if "sticky" in spec:
                    self.server.faults.set_sticky(spec["sticky"])
            except ValueError as exc:
                return self._envelope(400, str(exc))
            return self._json(200, {"queued": len(self.server.faults.queue)})
        if path == "/_standin/reset" and method == "POST":
            with self.server.received_lock:
                self.server.received.clear()
            self.server.faults.clear()
            return self._json(200, {"ok": True})
        return self._envelope(404, None)

    # -- synthesis (/v1/tts, /generate, /v1/audio/speech) ----------------------------------------
    def _parse(self, raw: bytes) -> dict:
        content_type = self.headers.get("Content-Type")
        if self.server.protocol == "s2cpp":
            return s2cpp_api.parse(content_type, raw)
        if self.server.protocol == "openai":
            return openai_api.parse(content_type, raw, self.server.vllm_build)
        return validate_tts(parse_body(content_type, raw))

    def _status_fault(self, fault: dict) -> HTTPFailure:
        code, message = int(fault.get("code", 503)), fault.get("message", "injected fault")
        headers = {"Retry-After": str(fault["retry_after"])} if "retry_after" in fault else {}
        if self.server.protocol == "s2cpp":
            failure = s2cpp_api.text_error(code, message)
        elif self.server.protocol == "openai":
            failure = openai_api.error(code, message)
        else:
            failure = HTTPFailure(code, message)
        failure.headers.update(headers)
        return failure

    def _synthesis(self, raw: bytes) -> None:
        # parsed first: a malformed request (s2.cpp's readiness probe among them) is refused without taking a fault
        request = self._parse(raw)
        return self._answer_request(request)

    def _answer(self, body: bytes, content_type: str, headers: dict, request: dict, audio: bytes,
                streamed: str | None) -> None:
        """The 200 answer: at once, or on the stand-in's scripted streaming profile (``--stream-profile``)."""
        if self.script is None:
            if streamed == "sse":
                body = openai_api.sse(body)
            return self._send(200, body, content_type, headers, chunked=streamed is not None or
                              self.server.protocol == "fish")
        scripted_answer(self, request["text"], body, Layout.of_wav_pcm16(audio, body), content_type, headers, streamed)

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
        if self.server.protocol == "s2cpp":  # a 32-bit float WAV with Content-Length, as s2.cpp answers
            body = audio if kind in ("nan", "wav_truncated_header") else s2cpp_api.float_wav(audio)
            if self.script is not None and body is not audio:  # --stream-profile: the whole WAV when it is done
                layout = Layout(len(body) - 4 * sf.info(io.BytesIO(audio)).frames, 4, voice.OUTPUT_RATE)
                return scripted_answer(self, request["text"], body, layout, "audio/wav", {}, None)
            return self._send(200, body, "audio/wav", {"Content-Disposition": 'attachment; filename="generated_audio.wav"'})
        if self.server.protocol == "openai":
            body, content_type = (audio, "audio/wav") if kind in ("nan", "wav_truncated_header") else \
                openai_api.encode(audio, request["format"])
            headers = {"x-vllm-omni-prompt-tokens": str(len(request["text"].split())),
                       "x-vllm-omni-completion-tokens": str(len(audio) // 2048)}
            if request["stream"] == "sse":  # stream=true without stream_format="audio": events, not audio
                return self._answer(body, "text/event-stream", headers, request, audio, "sse")
            return self._answer(body, content_type, headers, request, audio, "raw" if request["stream"] else None)
        headers = {"Content-Disposition": f"attachment; filename=audio.{request['format']}"}
        if request["streaming"]:  # Fish drops the WAV header when streaming: raw s16le
            return self._answer(wavs.pcm_only(audio), "audio/wav", headers, request, audio, "raw")
        self._answer(audio, "audio/wav", headers, request, audio, None)

    def _synthesize(self, request: dict, ignore_reference: bool, fault: dict | None = None) -> bytes:
        """The answer's audio (a WAV at ``voice.OUTPUT_RATE``) for every protocol, failure behaviour applied."""
        if self.server.protocol == "fish" and request["format"] in ("pcm", "opus"):
            raise HTTPFailure(500, "Failed to generate speech")
        script, profile = getattr(self, "script", None), self.server.stream_profile
        if script is not None and profile.drift and script[2] > 1 and request.get("seed") is not None:
            request = {**request, "seed": (request["seed"] * 1009 + script[2]) % 2**31}  # batched: other audio
        references = request["references"]
        if request.get("reference_id") is not None:
            references = self._stored_references(request["reference_id"])
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

    def _stored_references(self, reference_id: str) -> list[dict]:
        """Fish's reference_id lookup: a valid but unknown id silently means no reference (and an empty folder)."""
        if not reference_id_valid(reference_id):
            raise HTTPFailure(500, "Failed to generate speech")
        if self.server.references_dir is None:
            return []
        folder = self.server.references_dir / reference_id
        folder.mkdir(parents=True, exist_ok=True)
        found = []
        for audio in sorted(p for p in folder.rglob("*") if p.suffix.lower() in AUDIO_EXTENSIONS):
            lab = audio.with_suffix(".lab")
            found.append({"audio": audio.read_bytes(), "text": lab.read_text() if lab.exists() else str(lab)})
        return found
