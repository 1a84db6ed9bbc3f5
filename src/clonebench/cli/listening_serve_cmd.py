"""Serve a listening test that `clonebench listening-test` built, and collect the ratings as raters answer.

    clonebench listening-serve DIR --raters N [--host H] [--port P] [--public-url URL] [--forwarded-allow-ips IPS]
                                          [--completion-url URL]
    clonebench listening-serve DIR --open [PARAM] ...     (raters join from a platform link: ?PROLIFIC_PID=...)
    clonebench listening-serve DIR --export               (write DIR/ratings/server-*.json and exit)

Each rater gets a personal link (an unguessable token in its #fragment; only its SHA-256 is stored), printed once
and written to DIR/server/links.txt (mode 0600). Every answer is checked against DIR/key.json (never served) and
committed to DIR/server/ratings.sqlite before the page moves on; a rater who reloads resumes where they stopped.
The admin view is BASE/admin#token=<DIR/server/admin_token>. Binds 127.0.0.1 unless --host is given. Then:
clonebench listening-results DIR DIR/ratings/*.json
"""

from __future__ import annotations

import argparse
import math
import socket
import sys
import threading
from pathlib import Path

SERVER = "server"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("test_dir", type=Path, help="the folder `clonebench listening-test` wrote")
    parser.add_argument("--raters", type=int, default=0, help="create N new rater links (printed once)")
    parser.add_argument("--open", nargs="?", const="PROLIFIC_PID", default=None, metavar="PARAM",
                        help="let a platform link create raters on first visit, the participant id in the query "
                             "parameter PARAM (default PROLIFIC_PID)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free port)")
    parser.add_argument("--public-url", help="the base URL raters reach (behind a reverse proxy), for the links")
    parser.add_argument("--forwarded-allow-ips", default="127.0.0.1,::1", metavar="IPS",
                        help="proxies whose X-Forwarded-For names the rater's address, comma-separated (default "
                             "127.0.0.1,::1: a reverse proxy on this host; '' believes none)")
    parser.add_argument("--rate-limit", type=_positive, default=10.0, metavar="PER_S",
                        help="answers per rater token and joins per address a second, after a burst of 40 "
                             "(default 10)")
    parser.add_argument("--admin-token-file", type=Path, help="the admin token (default: DIR/server/admin_token, "
                                                               "generated with mode 0600)")
    parser.add_argument("--completion-url", help="send a finished rater there: {code} and {participant} are "
                                                 "replaced, else ?participant=ID&cc=CODE is appended")
    parser.add_argument("--completion-code", help="one completion code for every rater (default: one per rater)")
    parser.add_argument("--max-lifetime", type=float, help="stop after this many seconds")
    parser.add_argument("--export", action="store_true", help="write the finished raters' ratings files and exit")


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of requests a second")
    return value


def _links(path: Path, lines: list[str]) -> None:
    from clonebench.listening.server.tokens import write_private

    old = path.read_text(encoding="utf-8") if path.exists() else ""
    write_private(path, old + "".join(f"{line}\n" for line in lines))


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from clonebench.listening.server import tokens
        from clonebench.listening.server.app import Settings, create_app, new_rater
    except ImportError as exc:
        from clonebench.core.errors import ClonebenchError
        raise ClonebenchError(f"listening-serve needs FastAPI and uvicorn ({exc.name} is missing): "
                              "pip install -e '.[serve]'") from None
    from clonebench.listening.ratings import load_key
    from clonebench.listening.server.export import export
    from clonebench.listening.server.store import Store

    key = load_key(args.test_dir)
    folder = args.test_dir / SERVER
    if args.export:
        store = Store(folder, key["test_id"], readonly=True)
        try:
            done = export(key, store, args.test_dir / "ratings")
        finally:
            store.close()
        print(f"exported {len(done['written'])} finished rater(s) to {args.test_dir / 'ratings'}/ "
              f"({done['unfinished']} unfinished, not exported)")
        return 0
    store = Store(folder, key["test_id"])  # holds the lock until the server stops
    try:
        admin, admin_path = tokens.admin_token(args.admin_token_file, folder / "admin_token")
        family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((args.host, args.port))
        sock.listen(128)
        host = f"[{args.host}]" if family == socket.AF_INET6 else args.host
        base = (args.public_url or f"http://{host}:{sock.getsockname()[1]}").rstrip("/")
        links = [f"{base}/#token={new_rater(store, key)[1]}" for _ in range(max(args.raters, 0))]
        if links:
            _links(folder / "links.txt", links)
            print(f"{len(links)} new rater link(s) (also in {folder / 'links.txt'}, mode 0600; shown only now):")
            print("\n".join(links))
        if not store.count() and not args.open:
            print("warning: no raters yet: give --raters N or --open", file=sys.stderr)
        page = (args.test_dir / "site" / "index.html").read_text(encoding="utf-8")
        if "hooks.answer" not in page:
            print("warning: this test's page was built by an older clonebench: it cannot post its answers "
                  "(rebuild the test with `clonebench listening-test`)", file=sys.stderr)
        settings = Settings(tokens.digest(admin), args.completion_url, args.completion_code, args.open,
                            rate_per_second=args.rate_limit)
        app = create_app(args.test_dir, key, store, settings)
        if args.open:
            print(f"platform link: {base}/?{args.open}=<participant id>")
        print(f"admin: {base}/admin#token=<the token in {admin_path}>")
        print(f"listening-serve: serving {base} (test {key['test_id']}, {key['kind']})", flush=True)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                               proxy_headers=True, forwarded_allow_ips=args.forwarded_allow_ips))
        if args.max_lifetime:
            timer = threading.Timer(args.max_lifetime, lambda: setattr(server, "should_exit", True))
            timer.daemon = True
            timer.start()
        server.run(sockets=[sock])
    finally:
        store.close()
    return 0
