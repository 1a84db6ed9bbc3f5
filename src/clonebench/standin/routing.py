"""Which stand-in code answers a request: the route table of every protocol (``--protocol``).

Two kinds. A **family** (Fish, s2.cpp, the OpenAI-compatible route) is answered by ``server.Handler`` itself,
which owns what they share (faults, seed handling, failure behaviours); the family gives its routes, how it
refuses a path, a method or a key, how it parses a request and sends a status fault, and how it sends the 200
(``answer``). A **delegated** protocol's module serves every route itself (``route(handler, method, path, body)``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from clonebench.standin import (
    cosyvoice_api,
    gpt_sovits_api,
    openai_api,
    s2cpp_api,
    sglang_omni_api,
    triton_api,
    wavs,
    zonos2_api,
)
from clonebench.standin.fish_api import HTTPFailure, parse_body, validate_tts

FISH_ROUTES = {"/v1/health": ("GET", "POST"), "/v1/tts": ("POST",)}


def fish_answer(handler, request: dict, audio: bytes, kind: str | None) -> None:
    headers = {"Content-Disposition": f"attachment; filename=audio.{request['format']}"}
    if request["streaming"]:  # Fish drops the WAV header when streaming: raw s16le
        return handler._answer(wavs.pcm_only(audio), "audio/wav", headers, request, audio, "raw")
    handler._answer(audio, "audio/wav", headers, request, audio, None)


@dataclass(frozen=True)
class Family:
    routes: dict[str, tuple[str, ...]]
    not_found: Callable[[str], HTTPFailure]                # path -> the refusal
    not_allowed: Callable[[tuple[str, ...]], HTTPFailure]  # the allowed methods -> the refusal
    parse: Callable[[str | None, bytes, str], dict]        # content type, body, vLLM build -> the request
    status: Callable[[int, str], HTTPFailure]              # a status fault in the family's error shape
    answer: Callable[..., None]                            # (handler, request, audio WAV, fault kind)
    keyed: bool = False                                    # --api-key guards every route


FAMILIES = {
    "fish": Family(FISH_ROUTES, lambda path: HTTPFailure(404),
                   lambda allowed: HTTPFailure(405, None, headers={"Allow": ", ".join(allowed)}),
                   lambda content_type, raw, build: validate_tts(parse_body(content_type, raw)),
                   lambda code, message: HTTPFailure(code, message), fish_answer, keyed=True),
    "s2cpp": Family(s2cpp_api.ROUTES, lambda path: s2cpp_api.not_found(), lambda allowed: s2cpp_api.not_found(),
                    lambda content_type, raw, build: s2cpp_api.parse(content_type, raw), s2cpp_api.text_error,
                    s2cpp_api.answer),
    "openai": Family(openai_api.ROUTES, lambda path: openai_api.error(404, f"Not Found: {path}"),
                     lambda allowed: openai_api.error(405, "Method Not Allowed"), openai_api.parse, openai_api.error,
                     openai_api.answer),
}
# modules that serve every route (.route); gpt_sovits and sglang_omni read server-side paths in references_dir
DELEGATED = {"triton": triton_api, "cosyvoice": cosyvoice_api, "zonos2": zonos2_api, "gpt_sovits": gpt_sovits_api,
             "sglang_omni": sglang_omni_api}
PROTOCOLS = (*FAMILIES, *DELEGATED)


def dispatch(handler, method: str, path: str, body: bytes, entry: dict) -> None:
    """Answer one request (control routes aside) on ``handler`` as its server's protocol does."""
    protocol = handler.server.protocol
    if protocol in DELEGATED:
        return DELEGATED[protocol].route(handler, method, path, body)
    family = FAMILIES[protocol]
    if path not in family.routes:
        raise family.not_found(path)
    if method not in family.routes[path]:
        raise family.not_allowed(family.routes[path])
    if family.keyed and handler.server.api_key and \
            handler.headers.get("Authorization") != f"Bearer {handler.server.api_key}":
        raise HTTPFailure(401, "Invalid or missing API key")
    if path in ("/v1/health", "/health"):
        return handler._json(200, {"status": "healthy" if protocol == "openai" else "ok"})
    if path == "/v1/models":
        return handler._send(200, openai_api.models(), "application/json")
    started = time.perf_counter()
    # parsed first: a malformed request (s2.cpp's readiness probe among them) is refused without taking a fault
    handler._answer_request(family.parse(handler.headers.get("Content-Type"), body, handler.server.vllm_build))
    entry["handled_s"] = time.perf_counter() - started  # server-side time, for overhead benchmarks


def control(handler, method: str, path: str, body: bytes) -> None:
    """The tests' control routes (``/_standin/...``, no key): the requests received, queued faults, a reset."""
    server = handler.server
    if path == "/_standin/received" and method == "GET":
        with server.received_lock:
            return handler._json(200, list(server.received))
    if path == "/_standin/faults" and method == "POST":
        spec = json.loads(body or b"{}")
        if spec.get("clear"):
            server.faults.clear()
        try:
            server.faults.add(spec.get("faults", []))
            if "sticky" in spec:
                server.faults.set_sticky(spec["sticky"])
        except ValueError as exc:
            return handler._envelope(400, str(exc))
        return handler._json(200, {"queued": len(server.faults.queue)})
    if path == "/_standin/reset" and method == "POST":
        with server.received_lock:
            server.received.clear()
        server.faults.clear()
        return handler._json(200, {"ok": True})
    return handler._envelope(404, None)
