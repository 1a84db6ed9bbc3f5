"""``clonebench listening-serve`` behind the reverse proxies docs/listening-tests.md prints: the nginx and Caddy
snippets are read from the page, given a throwaway certificate (trustme) and loopback ports in place of the
public name's, and run as Debian's own binaries (never a system service). Through each, over TLS: a rater
completes a MOS test, the links carry the public address, the page keeps its Content-Security-Policy, the key
stays out of reach, oversized bodies are refused, and a rater cannot choose the address the join limit is keyed
by (the proxy overwrites X-Forwarded-For)."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from clonebench.cli.main import main as cli
from clonebench.listening.ratings import check_sheet, load_key
from clonebench.listening.server.tokens import RateBound
from tests.integration.test_listening_server import Server, rate, test_dir, token_of  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow

DOC = Path(__file__).resolve().parents[2] / "docs" / "listening-tests.md"
HOST = "listen.example.org"
DOC_CERT = f"/etc/letsencrypt/live/{HOST}/fullchain.pem"
DOC_KEY = f"/etc/letsencrypt/live/{HOST}/privkey.pem"
DOC_UPSTREAM = "127.0.0.1:8000"
BURST = RateBound().burst


def snippets() -> dict[str, str]:
    """The nginx server block and the Caddy site block, as the page prints them."""
    text = DOC.read_text(encoding="utf-8")
    block = text.split("# nginx\n", 1)[1].split("```", 1)[0]
    nginx, caddy = block.split("# Caddy\n", 1)
    return {"nginx": nginx, "caddy": caddy}


def replaced(text: str, old: str, new: str) -> str:
    assert old in text, f"the snippet in {DOC} no longer has {old!r}: update this test with it"
    return text.replace(old, new)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def binary(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")
    if found is None:
        pytest.fail(f"{name} is missing: run `bash scripts/setup.sh` (apt-get install {name})")
    return found


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """(CA-trusting SSL context, certificate chain path, key path) for HOST, from a throwaway CA."""
    import trustme

    folder = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    issued = ca.issue_cert(HOST)
    chain, key = folder / "fullchain.pem", folder / "privkey.pem"
    for n, pem in enumerate(issued.cert_chain_pems):
        pem.write_to_path(str(chain), append=n > 0)
    issued.private_key_pem.write_to_path(str(key))
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context, chain, key


def start_proxy(kind: str, work: Path, port: int, upstream: int, chain: Path, key: Path) -> subprocess.Popen:
    block = replaced(snippets()[kind], DOC_UPSTREAM, f"127.0.0.1:{upstream}")
    env = {**os.environ, "HOME": str(work), "XDG_DATA_HOME": str(work / "data"), "XDG_CONFIG_HOME": str(work)}
    if kind == "nginx":
        block = replaced(block, "listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;")
        block = replaced(replaced(block, DOC_CERT, str(chain)), DOC_KEY, str(key))
        temp = " ".join(f"{name}_temp_path {work / name};" for name in ("client_body", "proxy", "fastcgi", "uwsgi",
                                                                        "scgi"))
        user = "user root;" if os.geteuid() == 0 else ""  # workers must read this test's private folders
        (work / "nginx.conf").write_text(f"{user} daemon off; pid {work / 'nginx.pid'}; error_log stderr warn;\n"
                                         f"events {{}}\nhttp {{ {temp}\n{block}\n}}\n")
        command = [binary("nginx"), "-p", str(work), "-e", "stderr", "-c", str(work / "nginx.conf")]
    else:
        block = replaced(block, f"{HOST} {{", f"https://{HOST}:{port} {{\n    bind 127.0.0.1\n    tls {chain} {key}")
        (work / "Caddyfile").write_text(f"{{\n    admin off\n    auto_https disable_redirects\n    https_port {port}\n"
                                        f"    http_port {free_port()}\n    storage file_system {work / 'data'}\n}}\n"
                                        f"{block}")
        command = [binary("caddy"), "run", "--config", str(work / "Caddyfile"), "--adapter", "caddyfile"]
    with open(work / "proxy.log", "wb") as log:  # a file, not a pipe nobody drains while the test runs
        proxy = subprocess.Popen(command, env=env, cwd=work, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proxy.poll() is not None:
            raise AssertionError(f"{kind} did not start: {(work / 'proxy.log').read_text(errors='replace')}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proxy
        except OSError:
            time.sleep(0.05)
    proxy.kill()
    raise AssertionError(f"{kind} did not listen on 127.0.0.1:{port} within 30 s")


def through(port: int, context: ssl.SSLContext, token: str | None = None) -> httpx.Client:
    """A client for the public name over TLS, connecting to the proxy's loopback port (SNI and Host are the public
    name, so the certificate is checked against it)."""
    headers = {"Host": f"{HOST}:{port}", **({"Authorization": f"Bearer {token}"} if token else {})}
    return httpx.Client(base_url=f"https://127.0.0.1:{port}", verify=context, headers=headers, timeout=20,
                        event_hooks={"request": [lambda request: request.extensions.update(sni_hostname=HOST)]})


@pytest.mark.timeout(180)
@pytest.mark.parametrize("kind", ["nginx", "caddy"])
def test_a_rater_completes_a_test_through_the_docs_reverse_proxy_over_tls(kind, test_dir, certificate,  # noqa: F811
                                                                          tmp_path):
    context, chain, key_pem = certificate
    folder = tmp_path / "test"
    shutil.copytree(test_dir, folder, ignore=shutil.ignore_patterns("server", "server-*.json", "results.json"))
    key = load_key(folder)
    port, upstream = free_port(), free_port()
    server = Server(folder, "--raters", "1", "--open", "--port", str(upstream), "--public-url",
                    f"https://{HOST}:{port}", "--rate-limit", "0.001")  # a burst of 40, then (nearly) no refill
    (tmp_path / kind).mkdir()
    proxy = start_proxy(kind, tmp_path / kind, port, upstream, chain, key_pem)
    try:
        [link] = server.links
        assert link.startswith(f"https://{HOST}:{port}/#token=")
        with through(port, context, token_of(link)) as rater:
            page = rater.get("/")
            assert page.status_code == 200 and "connect-src 'self'" in page.headers["content-security-policy"]
            clip = next(iter(key["clips"]))
            wav = rater.get(f"/clips/{clip}.wav")
            assert wav.content == (folder / "site" / "clips" / f"{clip}.wav").read_bytes()
            for path in ("/key.json", "/server/admin_token", "/../key.json", "/%2e%2e/key.json"):
                reply = rater.get(path)
                assert reply.status_code in (400, 404) and key["salt"] not in reply.text, (path, reply.status_code)
            rate("", key, token_of(link), client=through(port, context))
            assert rater.get("/api/config").json()["finished"]
            for size in (20_000, 100_000):  # over the server's 16 KiB; over nginx's 64k too
                reply = rater.post("/api/answer", content=b'{"pad": "' + b"x" * size + b'"}',
                                   headers={"Content-Type": "application/json"})
                assert reply.status_code == 413, (size, reply.status_code)
        # the proxy writes X-Forwarded-For itself: a spoofed one does not give a rater a fresh join limit
        with through(port, context) as anyone:
            codes = [anyone.post("/api/join", json={"participant": f"P{n}"},
                                 headers={"X-Forwarded-For": f"10.0.0.{n}"}).status_code for n in range(BURST + 3)]
        assert codes == [200] * BURST + [429] * 3, codes
    finally:
        proxy.terminate()
        proxy.wait(15)
        server.stop()
    assert cli(["listening-serve", str(folder), "--export"]) == 0
    [sheet_path] = (folder / "ratings").glob("server-*.json")
    assert check_sheet(sheet_path, key)[1] == []


@pytest.mark.timeout(60)
def test_the_join_limit_is_keyed_by_the_address_a_trusted_proxy_names(test_dir, tmp_path):  # noqa: F811
    """Raters behind one proxy on this host each get their own join limit (uvicorn believes X-Forwarded-For from
    --forwarded-allow-ips, default loopback); with '' it is believed from nowhere and they share one."""
    folder = tmp_path / "test"
    shutil.copytree(test_dir, folder, ignore=shutil.ignore_patterns("server", "server-*.json", "results.json"))
    for allowed, shared in ((None, False), ("", True)):
        extra = () if allowed is None else ("--forwarded-allow-ips", allowed)
        server = Server(folder, "--open", "--rate-limit", "0.001", *extra)
        try:
            with httpx.Client(base_url=server.base, timeout=20) as client:
                codes = [client.post("/api/join", json={"participant": f"{allowed is None}-{n}"},
                                     headers={"X-Forwarded-For": f"198.51.100.{n}"}).status_code
                         for n in range(BURST + 3)]
        finally:
            server.stop()
        assert codes == [200] * BURST + ([429] * 3 if shared else [200] * 3), (allowed, codes)
