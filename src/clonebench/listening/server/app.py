"""The FastAPI app of ``clonebench listening-serve``: the test's site, the rater API and the admin view.

    GET  /, /index.html                    the page, public: served with ``connect-src 'self'`` added to its CSP,
                                           the ``listening/static/server.js`` hook that makes it post its answers,
                                           and no trial list (a rater's order comes from /api/config)
    GET  /clips/<id>.wav                   the rest of the built site (only files under DIR/site; no listing, no
                                           '..', no dot-files; DIR/key.json is outside it and never served), to a
                                           valid rater or the admin only: the Authorization header, or the rater
                                           cookie that /api/config sets (HttpOnly, SameSite=Strict, Path=/clips/)
                                           so the page's <audio> elements can send it. No token is ever in a URL
                                           the server sees (the rater's link holds it in the fragment).
    GET  /api/config                       the rater's state (Authorization: Bearer <rater token>): order,
                                           answers so far, completion code when done; sets the rater cookie
    POST /api/answer                       one answer; 200 only once it is committed to the database
    POST /api/join                         (--open only) a platform participant becomes a rater: returns a token
    GET  /admin, /admin/api/status         the admin view (Authorization: Bearer <admin token>; the page reads the
                                           token from its URL fragment)
    GET|POST /admin/export                 write the finished raters' ratings files into DIR/ratings/
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from clonebench.listening.build import SITE
from clonebench.listening.page import CSP, PAGE
from clonebench.listening.server import tokens
from clonebench.listening.server.export import export
from clonebench.listening.server.protocol import (
    Refused,
    check_answer,
    draw_order,
    finished,
)
from clonebench.listening.server.status import ADMIN_PAGE, status
from clonebench.listening.server.store import DiskFull, ParticipantTaken, Store
from clonebench.report.html_page import script_json

MAX_BODY = 16 * 1024
PARTICIPANT = re.compile(r"[A-Za-z0-9._-]{1,64}")
SERVED_CSP = CSP.replace("default-src 'none';", "default-src 'none'; connect-src 'self';")
ADMIN_CSP = "default-src 'none'; connect-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"
HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}
CONFIG_TAG = '<script type="application/json" id="test-config">'
RATER_COOKIE, COOKIE_PATH = "clonebench_rater", "/clips/"
log = logging.getLogger("clonebench.listening.server")


@dataclass
class Settings:
    admin_sha256: str
    completion_url: str | None = None
    completion_code: str | None = None
    open_param: str | None = None         # --open: the query parameter holding the platform's participant id
    rate_per_second: float = 10.0


def new_rater(store: Store, key: dict, participant: str | None = None) -> tuple[str, str]:
    """Create a rater (order drawn from a fresh seed, stored); return (rater id, token), the token shown once."""
    token, seed = tokens.new_token(), secrets.randbits(63)
    rater_id = store.add_rater(lambda n: f"r{n + 1:04d}-{secrets.token_hex(2)}", tokens.digest(token), seed,
                               draw_order(key, seed), participant)
    return rater_id, token


def public_page(page: str, hook: str) -> str:
    """The built page as the server serves it: its CSP allows ``connect-src 'self'``, the server hook is in, and
    its embedded config keeps the kind, scale and test id but no trial or clip id (anyone may load the page)."""
    start = page.index(CONFIG_TAG) + len(CONFIG_TAG)
    end = page.index("</script>", start)
    config = {**json.loads(page[start:end]), "training": [], "trials": []}
    page = page[:start] + script_json(config) + page[end:]
    return page.replace(CSP, SERVED_CSP, 1).replace(CONFIG_TAG, f"<script>{hook}</script>\n{CONFIG_TAG}", 1)


def _json(data, status_code: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code, headers={**HEADERS, "Cache-Control": "no-store"})


def _error(status_code: int, *problems: str) -> JSONResponse:
    return _json({"error": problems[0] if problems else "refused", "problems": list(problems)}, status_code)


async def _body(request: Request):
    """The JSON body, at most MAX_BODY bytes (413 beyond, whatever Content-Length says)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY):
        raise Refused(413, [f"the body is over {MAX_BODY} bytes"])
    data = bytearray()
    async for chunk in request.stream():  # a client gone before its body ends: ClientDisconnect, see create_app
        data += chunk
        if len(data) > MAX_BODY:
            raise Refused(413, [f"the body is over {MAX_BODY} bytes"])
    try:
        return json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise Refused(400, ["the body is not JSON"]) from None


def create_app(test_dir: Path, key: dict, store: Store, settings: Settings) -> FastAPI:
    site = (Path(test_dir) / SITE).resolve()
    page = (site / PAGE).read_text(encoding="utf-8")
    hook = resources.files("clonebench.listening").joinpath("static", "server.js").read_text(encoding="utf-8")
    served_page = public_page(page, hook)
    rate = tokens.RateBound(settings.rate_per_second)
    answering = threading.Lock()
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)

    @app.exception_handler(ClientDisconnect)
    def gone(request: Request, exc: ClientDisconnect) -> Response:
        """A client that left before its body ended is normal traffic: one line, no traceback (no one reads the
        answer; nothing of the request was saved)."""
        log.warning("%s %s: the client disconnected before its body ended (nothing saved)", request.method,
                    request.url.path)
        return Response(status_code=400)

    def rater_of(request: Request, cookie: bool = False) -> dict | None:
        token = tokens.bearer(request.headers.get("authorization"))
        if token is None and cookie:
            token = request.cookies.get(RATER_COOKIE)
            token = token if token and tokens.TOKEN.fullmatch(token) else None
        return store.rater(tokens.digest(token)) if token else None

    def admin(request: Request) -> bool:
        return tokens.same(tokens.bearer(request.headers.get("authorization")), settings.admin_sha256)

    def redirect(rater: dict) -> str | None:
        if not settings.completion_url or not rater["completion_code"]:
            return None
        who, code = quote(rater["participant"] or rater["rater_id"], safe=""), quote(rater["completion_code"], safe="")
        url = settings.completion_url
        if "{code}" in url or "{participant}" in url:
            return url.replace("{code}", code).replace("{participant}", who)
        return f"{url}{'&' if '?' in url else '?'}participant={who}&cc={code}"

    def state(rater: dict) -> dict:
        answered = store.answers(rater["id"])
        return {"test_id": key["test_id"], "kind": key["kind"], "rater_id": rater["rater_id"],
                "order": rater["order"], "answered": answered, "finished": finished(rater["order"], answered),
                "completion_code": rater["completion_code"], "redirect": redirect(rater)}

    def answer(rater: dict, body, agent: str) -> dict:
        with answering:  # one answer checked and committed at a time: two tabs cannot both take one position
            return _answer(rater, body, agent)

    def _answer(rater: dict, body, agent: str) -> dict:
        rater = store.rater(rater["token_sha256"]) or rater
        answered = store.answers(rater["id"])
        phase, record, replay = check_answer(key, rater["order"], answered, body)
        if not replay:
            answered[phase].append(record)
            done = finished(rater["order"], answered)
            code = (settings.completion_code or secrets.token_hex(4).upper()) if done else None
            store.save_answer(rater["id"], phase, record, agent[:1000], code)  # committed before the reply
            rater = {**rater, "completion_code": code or rater["completion_code"]}
        return {"saved": True, "replay": replay, "phase": phase, "position": record["position"],
                "finished": finished(rater["order"], answered), "completion_code": rater["completion_code"],
                "redirect": redirect(rater)}

    @app.get("/api/config")
    def config(request: Request):
        rater = rater_of(request)
        if rater is None:
            return _error(401, "unknown or missing rater token: open the link you were given")
        reply = _json(state(rater))
        reply.set_cookie(RATER_COOKIE, tokens.bearer(request.headers.get("authorization")), path=COOKIE_PATH,
                         httponly=True, samesite="strict", secure=request.url.scheme == "https")
        return reply

    @app.post("/api/answer")
    async def post_answer(request: Request):
        rater = await run_in_threadpool(rater_of, request)
        if rater is None:
            return _error(401, "unknown or missing rater token: open the link you were given")
        if not rate.allow(rater["token_sha256"]):
            return _error(429, "too many requests: wait a moment")
        try:
            body = await _body(request)
            return _json(await run_in_threadpool(answer, rater, body, request.headers.get("user-agent", "")))
        except Refused as exc:
            return _error(exc.status, *exc.problems)
        except DiskFull as exc:
            return _error(507, str(exc))

    @app.post("/api/join")
    async def join(request: Request):
        if not settings.open_param:
            return _error(404, "not found")
        if not rate.allow("join:" + (request.client.host if request.client else "")):
            return _error(429, "too many requests: wait a moment")
        try:
            body = await _body(request)
        except Refused as exc:
            return _error(exc.status, *exc.problems)
        participant = body.get("participant") if isinstance(body, dict) else None
        if not isinstance(participant, str) or not PARTICIPANT.fullmatch(participant):
            return _error(422, "participant: 1-64 letters, digits, '.', '_', '-'")
        try:
            rater_id, token = await run_in_threadpool(new_rater, store, key, participant)
        except ParticipantTaken:
            return _error(409, "this participant has already started: reopen the page you were on (its address "
                               "holds your session), or contact the researcher")
        except DiskFull as exc:
            return _error(507, str(exc))
        return _json({"token": token, "rater_id": rater_id})

    @app.get("/api/mode")
    def mode():
        return _json({"server": True, "open_param": settings.open_param})

    @app.get("/admin")
    def admin_page():
        return HTMLResponse(ADMIN_PAGE, headers={**HEADERS, "Content-Security-Policy": ADMIN_CSP,
                                                 "Cache-Control": "no-store"})

    @app.get("/admin/api/status")
    def admin_status(request: Request):
        if not admin(request):
            return _error(401, "admin token required")
        return _json(status(key, store))

    @app.api_route("/admin/export", methods=["GET", "POST"])
    def admin_export(request: Request):
        if not admin(request):
            return _error(401, "admin token required")
        return _json(export(key, store, Path(test_dir) / "ratings"))

    @app.get("/{path:path}")
    def site_file(path: str, request: Request):
        parts = path.split("/") if path else [PAGE]
        if parts == [PAGE]:
            return HTMLResponse(served_page, headers={**HEADERS, "Content-Security-Policy": SERVED_CSP,
                                                      "Cache-Control": "no-store"})
        if not admin(request) and rater_of(request, cookie=True) is None:  # one answer for any path: no oracle
            return _error(401, "a rater's token is needed: open the link you were given")
        if path.endswith("/") or any(p in ("", ".", "..") or p.startswith(".") or "\\" in p or "\0" in p
                                     for p in parts):
            return _error(404, "not found")
        try:
            target = site.joinpath(*parts).resolve(strict=True)
        except (OSError, ValueError):
            return _error(404, "not found")
        if not target.is_relative_to(site) or not target.is_file():
            return _error(404, "not found")
        return FileResponse(target, headers={**HEADERS, "Cache-Control": "private, no-cache"})

    return app
