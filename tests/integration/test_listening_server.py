"""``clonebench listening-serve``: a listening test that collects its own ratings. The server runs in a subprocess
on 127.0.0.1:0 (it stops itself: --max-lifetime); 20 scripted raters answer a MOS test in parallel over HTTP; the
server is SIGKILLed mid-test and restarted (no acknowledged answer lost, raters resume in the same order); a second
server on the same folder refuses; the export is accepted by listening-results and gives the numbers the same
answers give as downloaded files; hostile requests are refused; one headless-Chromium rater completes the test.
An arena (pairwise) test served the same way: 20 raters in parallel, the export ranks the known system order."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from clonebench.cli.main import main as cli
from clonebench.listening.integrity import sealed
from clonebench.listening.ratings import check_sheet, load_key
from clonebench.listening.server.store import DiskFull, Store, StoreError
from tests.integration.test_listening_arena import STRENGTH, runs  # noqa: F401 (runs: the arena's fixture)
from tests.listening_runs import generation_runs

SRC = str(Path(__file__).resolve().parents[2] / "src")
TRUTH = {"S1": 3, "natural": 5}
DONE = "https://platform.example/complete"


@pytest.fixture(scope="module")
def test_dir(tmp_path_factory, demo_dataset) -> Path:
    tmp = tmp_path_factory.mktemp("serve")
    made = generation_runs(tmp, demo_dataset, names=("run_a",))
    out = tmp / "mos"
    assert cli(["listening-test", str(made["run_a"]), "--kind", "mos", "--items", "4", "--output", str(out),
                "--seed", "3", "--checks", "1"]) == 0
    return out


class Server:
    def __init__(self, folder: Path, *extra: str):
        self.proc = subprocess.Popen([sys.executable, "-m", "clonebench.cli.main", "listening-serve", str(folder),
                                      "--port", "0", "--max-lifetime", "50", *extra], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": SRC})
        self.links, lines = [], []
        for line in self.proc.stdout:
            lines.append(line)
            if "#token=" in line and line.startswith("http"):
                self.links.append(line.strip())
            match = re.search(r"serving (https?://\S+)", line)
            if match:
                self.base = match.group(1)
                return
        raise AssertionError(f"the server did not start: {''.join(lines)} {self.proc.stderr.read()}")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> str:
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=15)
        return err


def token_of(link: str) -> str:
    return link.split("#token=", 1)[1]


def value(key: dict, trial_id: str, clip: str, rater: str) -> int:
    trial = next(t for t in key["trials"] if t["trial_id"] == trial_id)
    role = key["clips"][clip]["role"]
    if role == "degraded" or trial["type"] == "check_degraded":
        return 1
    base = TRUTH.get(key["clips"][clip]["system"] or "natural", 4)
    if trial["type"] == "check_repeat":
        trial_id = trial["repeat_of"]
    return min(5, max(1, base + hashlib.sha256((rater + trial_id).encode()).digest()[0] % 3 - 1))


def record_for(key: dict, rater: str, shown: dict, position: int) -> dict:
    """What the scripted rater answers at a position (deterministic: the same after a crash)."""
    return {"trial": shown["id"], "position": position, "clips": shown["clips"], "reference": shown["reference"],
            "plays": {shown["clips"][0]: 1}, "ends": {shown["clips"][0]: 1}, "shown_ms": 1000 * position,
            "answered_ms": 1000 * position + 900, "rating": value(key, shown["id"], shown["clips"][0], rater)}


def rate(base: str, key: dict, token: str, progress: list | None = None, answer=record_for,
         client: httpx.Client | None = None) -> dict:
    """One scripted rater: answer from where the server says it stopped; return the acknowledged records (until
    the server goes away, when ``progress`` is given). ``client``: another way to reach the server (a proxy),
    closed at the end like the default one."""
    acked = {"training": [], "test": []}
    with client or httpx.Client(base_url=base, timeout=20) as http:
        http.headers["Authorization"] = f"Bearer {token}"
        state = http.get("/api/config").json()
        acked["rater_id"], acked["order"] = state["rater_id"], state["order"]
        for phase in ("training", "test"):
            for position in range(len(state["answered"][phase]), len(state["order"][phase])):
                record = answer(key, state["rater_id"], state["order"][phase][position], position)
                try:
                    reply = http.post("/api/answer", json={"phase": phase, "record": record})
                except httpx.TransportError:
                    if progress is None:
                        raise
                    return acked  # the server was killed: this answer was not acknowledged
                assert reply.status_code == 200, reply.text
                acked[phase].append(record)
                if progress is not None:
                    progress.append(1)
    return acked


def raw_get(base: str, target: str, token: str | None = None) -> bytes:
    host, port = base.removeprefix("http://").split(":")
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


def results(folder: Path, files: list[Path]) -> dict:
    assert cli(["listening-results", str(folder), *map(str, files), "--format", "csv"]) == 0
    summary = json.loads((folder / "results.json").read_text())
    return {k: summary[k] for k in ("scores", "raters", "alpha", "arena", "cmos") if k in summary} | {"n": len(files)}


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_twenty_raters_a_crash_a_restart_and_the_export(test_dir, tmp_path, capsys):
    key = load_key(test_dir)
    first = Server(test_dir, "--raters", "21")
    assert len(first.links) == 21 and oct((test_dir / "server" / "links.txt").stat().st_mode & 0o777) == "0o600"
    tokens = [token_of(link) for link in first.links[:20]]
    spare = token_of(first.links[20])
    second = subprocess.run([sys.executable, "-m", "clonebench.cli.main", "listening-serve", str(test_dir),
                             "--port", "0", "--max-lifetime", "5"], check=False, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": SRC}, timeout=30)
    assert second.returncode == 2 and f"pid {first.proc.pid}" in second.stderr, second.stderr

    progress: list = []
    with ThreadPoolExecutor(20) as pool:  # the 20 raters answer in parallel; SIGKILL while they do
        running = [pool.submit(rate, first.base, key, t, progress) for t in tokens]
        deadline = time.monotonic() + 20
        while len(progress) < 100 and time.monotonic() < deadline:
            time.sleep(0.005)
        first.kill()
        halves = [f.result() for f in running]
    assert 100 <= sum(len(h["test"]) + len(h["training"]) for h in halves) < 20 * 13
    restarted = Server(test_dir, "--rate-limit", "1")  # the bound hostile() checks, whatever the machine load
    try:
        with httpx.Client(base_url=restarted.base, timeout=20) as client:
            for token, acked in zip(tokens, halves):  # nothing acknowledged is lost; the order is the same
                state = client.get("/api/config", headers={"Authorization": f"Bearer {token}"}).json()
                assert state["order"] == acked["order"]
                for phase in ("training", "test"):  # every acknowledged answer is there (and at most one more:
                    stored = state["answered"][phase]  # committed, then killed before the reply)
                    assert stored[:len(acked[phase])] == acked[phase] and len(stored) - len(acked[phase]) <= 1
                assert not state["finished"]
        with ThreadPoolExecutor(20) as pool:
            list(pool.map(lambda t: rate(restarted.base, key, t), tokens))
        hostile(restarted.base, key, spare, tokens[0])
        admin = (test_dir / "server" / "admin_token").read_text().strip()
        with httpx.Client(base_url=restarted.base, timeout=20) as client:
            assert client.get("/admin/api/status").status_code == 401
            status = client.get("/admin/api/status", headers={"Authorization": f"Bearer {admin}"}).json()
            assert status["raters"]["finished"] == 20 and status["raters"]["kept"] == 20
            assert set(status["answers_per_trial"].values()) == {20}
            assert "Listening test: admin" in client.get("/admin").text
            exported = client.post("/admin/export", headers={"Authorization": f"Bearer {admin}"}).json()
            assert len(exported["written"]) == 20 and exported["unfinished"] == 1
            config = client.get("/api/config", headers={"Authorization": f"Bearer {tokens[0]}"}).json()
            assert config["finished"] and re.fullmatch(r"[0-9A-F]{8}", config["completion_code"])
        err = restarted.stop()
    finally:
        if restarted.proc.poll() is None:
            restarted.kill()
    assert not any(t in err for t in tokens + [spare, admin])  # no token is ever logged
    capsys.readouterr()
    files = sorted((test_dir / "ratings").glob("server-*.json"))
    assert len(files) == 20
    served = results(test_dir, files)
    # the same answers as the page downloads them (one file per rater, sealed by the page's digest)
    page_dir = tmp_path / "page"
    page_dir.mkdir()
    for a in halves:
        rater, order = a["rater_id"], a["order"]
        payload = {"schema": "clonebench.listening.ratings/v1", "test_id": key["test_id"], "kind": "mos",
                   "rater_id": rater, "user_agent": "x", "started_at": "", "finished_at": "",
                   **{name: [record_for(key, rater, shown, k) for k, shown in enumerate(order[phase])]
                      for name, phase in (("training", "training"), ("trials", "test"))}}
        (page_dir / f"{rater}.json").write_text(json.dumps(sealed(key["salt"], payload)))
    downloaded = results(test_dir, sorted(page_dir.glob("*.json")))
    assert served == downloaded and served["raters"]["kept"] == 20
    assert {r["condition"] for r in served["scores"]} == {"S1", "natural"}
    # the export from the command line (no server running) writes the same files
    before = {f.name: f.read_bytes() for f in files}
    assert cli(["listening-serve", str(test_dir), "--export"]) == 0
    assert {f.name: f.read_bytes() for f in sorted((test_dir / "ratings").glob("server-*.json"))} == before


@pytest.fixture(scope="module")
def arena_dir(tmp_path_factory, runs) -> Path:  # noqa: F811 (runs: the arena's fixture)
    """The arena test as test_listening_arena.py builds it (its own folder: the server writes into it)."""
    out = tmp_path_factory.mktemp("serve_arena") / "arena"
    assert cli(["listening-test", str(runs["run_a"]), str(runs["run_b"]), str(runs["run_c"]), "--kind", "arena",
                "--items", "8", "--pairs-per-item", "2", "--output", str(out), "--label", "fish", "--label", "s2cpp",
                "--label", "third"]) == 0
    return out


def arena_record(key: dict, rater: str, shown: dict, position: int) -> dict:
    """The scripted arena rater: the clean clip over its degraded copy; else Bradley-Terry with STRENGTH and 15 %
    "same", drawn from (rater, trial) so a repeat gets the first trial's answer (in the order it is shown)."""
    trial = next(t for t in key["trials"] if t["trial_id"] == shown["id"])
    a = key["clips"][shown["clips"][0]]
    if not trial["systems"]:
        answer = "B" if a["role"] == "degraded" else "A"
    else:
        seed = hashlib.sha256((rater + (trial.get("repeat_of") or trial["trial_id"])).encode()).digest()
        u, (first, second) = int.from_bytes(seed[:8], "big") / 2**64, trial["systems"]
        winner = first if u < 0.15 + 0.85 / (1 + math.exp(STRENGTH[second] - STRENGTH[first])) else second
        answer = "same" if u < 0.15 else "A" if a["system"] == winner else "B"
    return {**record_for(key, rater, shown, position), "plays": {c: 1 for c in shown["clips"]}, "rating": answer}


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_twenty_raters_complete_a_served_arena_test_and_the_export_ranks_the_known_order(arena_dir, capsys):
    key = load_key(arena_dir)
    server = Server(arena_dir, "--raters", "20")
    tokens = [token_of(link) for link in server.links]
    try:
        with httpx.Client(base_url=server.base, timeout=20) as client:  # only "A", "B" or "same"; nothing stored
            auth = {"Authorization": f"Bearer {tokens[0]}"}
            shown = client.get("/api/config", headers=auth).json()["order"]["training"][0]
            for bad in ("C", "a", "", "SAME", "A ", 1, 0, -1, True, None, ["A"], {"A": 1}):
                record = {**arena_record(key, "x", shown, 0), "rating": bad}
                reply = client.post("/api/answer", headers=auth, json={"phase": "training", "record": record})
                assert reply.status_code == 422 and "rating" in reply.text, (bad, reply.text)
            assert client.get("/api/config", headers=auth).json()["answered"] == {"training": [], "test": []}
        with ThreadPoolExecutor(20) as pool:
            done = list(pool.map(lambda t: rate(server.base, key, t, answer=arena_record), tokens))
        sides: dict[str, set] = {}  # A and B drawn per rater (as the page draws them); answers in the order shown
        for d in done:
            for t in d["order"]["test"]:
                sides.setdefault(t["id"], set()).add(tuple(t["clips"]))
        assert sum(len(s) == 2 for s in sides.values()) > len(sides) // 2
        admin = {"Authorization": f"Bearer {(arena_dir / 'server' / 'admin_token').read_text().strip()}"}
        with httpx.Client(base_url=server.base, timeout=20) as client:
            status = client.get("/admin/api/status", headers=admin).json()
            assert status["raters"]["finished"] == 20 and set(status["answers_per_trial"].values()) == {20}
            exported = client.post("/admin/export", headers=admin).json()
            assert len(exported["written"]) == 20 and exported["unfinished"] == 0
    finally:
        server.stop()
    capsys.readouterr()
    files = sorted((arena_dir / "ratings").glob("server-*.json"))
    served = results(arena_dir, files)
    assert served["raters"]["kept"] == 20 and served["raters"]["excluded"] == []  # every check passed
    ranked = served["arena"]["systems"]
    assert [r["label"] for r in ranked] == ["fish", "s2cpp", "third"] and [r["rank"] for r in ranked] == [1, 2, 3]
    assert sum(map(sum, served["arena"]["matrix"]["n"])) == 2 * 20 * 16  # 20 raters x 16 comparisons, both ways


def hostile(base: str, key: dict, token: str, finished_token: str) -> None:
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, timeout=20) as client:
        for bad in ({}, {"Authorization": "Bearer " + "A" * 43}, {"Authorization": "Basic abc"}):
            assert client.get("/api/config", headers=bad).status_code == 401
            assert client.post("/api/answer", headers=bad, json={}).status_code == 401
        state = client.get("/api/config", headers=auth).json()
        shown = state["order"]["training"][0]
        record = {"trial": shown["id"], "position": 0, "clips": shown["clips"], "reference": None,
                  "shown_ms": 0, "answered_ms": 5, "rating": 5}

        def post(phase="training", **change):
            return client.post("/api/answer", headers=auth, json={"phase": phase, "record": {**record, **change}})

        for change in ({"rating": 7}, {"rating": 0}, {"rating": "5"}, {"rating": True}, {"clips": ["nope"]},
                       {"trial": "nope"}, {"position": 3}, {"clips": []}, {"shown_ms": 1.5}):
            assert post(**change).status_code in (409, 422), change
        assert post("test").status_code in (409, 422)  # a test trial before the training is done
        assert post().status_code == 200
        assert post().json()["replay"] is True                  # the same answer again: idempotent
        assert post(rating=3).status_code == 409                # another answer to an answered trial: refused
        huge = {"phase": "training", "record": {**record, "pad": "x" * 20_000}}
        assert client.post("/api/answer", headers=auth, json=huge).status_code == 413
        chunks = iter([b'{"phase": "training", "record": {"pad": "', b"x" * 20_000, b'"}}'])
        assert client.post("/api/answer", headers=auth, content=chunks).status_code == 413
        assert client.post("/api/answer", headers=auth, content=b"{not json").status_code == 400
        codes = [post().status_code for _ in range(60)]          # the per-token rate bound
        assert 429 in codes
        assert client.post("/api/answer", headers={"Authorization": f"Bearer {finished_token}"},
                           json={"phase": "test", "record": record}).status_code in (409, 422)
        assert client.get("/index.html").status_code == 200
        page = client.get("/")
        assert "connect-src 'self'" in page.headers["content-security-policy"] and "listeningServer" in page.text
        clip = next(iter(key["clips"]))
        assert client.get(f"/clips/{clip}.wav", headers=auth).headers["content-type"].startswith("audio/")
        for path in ("/key.json", "/clips/", "/clips", "/server/admin_token", "/.hidden"):
            assert client.get(path, headers=auth).status_code == 404, path
    secret = key["salt"].encode()
    for target in ("/../key.json", "/site/../key.json", "/%2e%2e/key.json", "/clips/..%2f..%2fkey.json",
                   "/clips/%2e%2e/%2e%2e/key.json", "//etc/passwd", "/..%5ckey.json", "/clips/../../key.json"):
        for who in (None, token):  # without a token, and as a valid rater (the path checks themselves)
            reply = raw_get(base, target, who)
            assert not reply.startswith(b"HTTP/1.1 200") and secret not in reply and b"id_secret" not in reply, target


def dropped(base: str, target: str, headers: str = "") -> None:
    """A client that declares a 100-byte body, sends 10 bytes and goes away."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(f"POST {target} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n{headers}"
                     "Content-Length: 100\r\n\r\n{\"phase\": ".encode())
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_only_raters_get_the_trials_and_clips_joins_are_atomic_and_a_dropped_client_is_one_line(test_dir, tmp_path):
    folder = tmp_path / "test"
    shutil.copytree(test_dir, folder, ignore=shutil.ignore_patterns("server", "server-*.json", "results.json"))
    key = load_key(folder)
    server = Server(folder, "--raters", "1", "--open", "--rate-limit", "1000")
    token, admin = token_of(server.links[0]), (folder / "server" / "admin_token").read_text().strip()
    secret_ids = {t["trial_id"] for t in key["trials"]} | set(key["clips"])
    try:
        with httpx.Client(base_url=server.base, timeout=20) as client:
            for path in ("/", "/index.html"):  # the page is public, but names no trial and no clip
                page = client.get(path)
                assert page.status_code == 200 and [i for i in secret_ids if i in page.text] == []
            for clip in key["clips"]:  # no clip without a token; a forged cookie or header is no token
                for headers in ({}, {"Cookie": f"clonebench_rater={'A' * 43}"}, {"Authorization": "Bearer " + "A" * 43}):
                    reply = client.get(f"/clips/{clip}.wav", headers=headers)
                    assert reply.status_code == 401 and not reply.content.startswith(b"RIFF"), (clip, headers)
            clip = next(iter(key["clips"]))
            wav = (folder / "site" / "clips" / f"{clip}.wav").read_bytes()
            assert client.get(f"/clips/{clip}.wav", headers={"Authorization": f"Bearer {admin}"}).content == wav
            config = client.get("/api/config", headers={"Authorization": f"Bearer {token}"})
            cookie = config.headers["set-cookie"]  # what the page's <audio> elements send: never in a URL
            assert all(part in cookie for part in ("HttpOnly", "SameSite=strict", "Path=/clips/")), cookie
            assert client.get(f"/clips/{clip}.wav").content == wav  # the client kept the cookie
            assert client.get("/api/config").status_code == 401    # the cookie is for the clips only
        for round_ in range(10):  # 16 simultaneous joins of one participant: one rater, the others 409
            barrier = threading.Barrier(16)

            def join(_, who=f"PID-{round_}"):
                with httpx.Client(base_url=server.base, timeout=20) as client:
                    barrier.wait()
                    return client.post("/api/join", json={"participant": who}).status_code

            with ThreadPoolExecutor(16) as pool:
                codes = sorted(pool.map(join, range(16)))
            assert codes == [200] + [409] * 15, (round_, codes)
        for _ in range(5):  # clients that go away mid-body: normal traffic, no traceback
            dropped(server.base, "/api/answer", f"Authorization: Bearer {token}\r\n")
            dropped(server.base, "/api/join")
        with httpx.Client(base_url=server.base, timeout=20) as client:  # still serving
            assert client.get("/api/config", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    finally:
        err = server.stop()
    assert "Traceback" not in err and "ClientDisconnect" not in err, err
    assert 1 <= err.count("disconnected before its body ended") <= 10 and token not in err, err


def test_the_store_refuses_another_schema_and_keeps_answers_when_the_disk_is_full(tmp_path):
    store = Store(tmp_path / "a", "lt-x")
    with pytest.raises(StoreError, match=r"pid \d+"):
        Store(tmp_path / "a", "lt-x")
    store.add_rater(lambda n: "r1", "d" * 64, 1, {"training": [], "test": []})
    store.db.execute(f"PRAGMA max_page_count = {store.db.execute('PRAGMA page_count').fetchone()[0] + 2}")
    saved = 0
    with pytest.raises(DiskFull, match="full"):
        for n in range(10_000):
            store.save_answer(1, "test", {"trial": f"t{n}", "position": n, "pad": "x" * 500}, "ua", None)
            saved += 1
    assert 0 < saved < 10_000 and len(store.answers(1)["test"]) == saved
    store.close()
    again = Store(tmp_path / "a", "lt-x")
    assert len(again.answers(1)["test"]) == saved
    again.close()
    with pytest.raises(StoreError, match="not 'lt-y'"):
        Store(tmp_path / "a", "lt-y")
    db = sqlite3.connect(tmp_path / "a" / "ratings.sqlite")
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="schema version '99'"):
        Store(tmp_path / "a", "lt-x")


def answered(page, policy, kind: str = "mos") -> None:
    """Answer the trial shown, then wait until the server has saved it (the page has moved on)."""
    from tests.listening_browser import answer_trial

    before = (page.text_content("#progress-text"), page.text_content("#phase"))
    answer_trial(page, kind, policy)
    deadline = time.monotonic() + 30  # a loaded CI machine: wait on the server's answer, not a count of polls
    while time.monotonic() < deadline:
        if page.is_visible("#done") or page.is_visible("#between") or \
                (page.text_content("#progress-text"), page.text_content("#phase")) != before:
            return
        page.wait_for_timeout(10)
    raise AssertionError(f"the answer was not saved: {page.text_content('#hint')}")


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_rater_in_headless_chromium_answers_reloads_resumes_and_finishes(test_dir, tmp_path):
    import playwright.sync_api as playwright_api  # never `playwright install`: Debian's chromium

    from clonebench.report.browser import launch
    from tests.listening_browser import answer_trial, key_policy, watch

    folder = tmp_path / "test"
    shutil.copytree(test_dir, folder, ignore=shutil.ignore_patterns("server", "server-*.json", "results.json"))
    key = load_key(folder)
    server = Server(folder, "--raters", "1", "--open", "--completion-url", DONE + "?cc={code}&pid={participant}")
    manager = playwright_api.sync_playwright().start()
    browser = launch(manager)
    try:
        page = browser.new_context().new_page()
        seen = watch(page, server.base + "/")
        page.goto(server.links[0].replace("/#", "/index.html#"))
        page.wait_for_selector("#start:enabled")
        assert page.input_value("#rater").startswith("r0001-")
        page.click("#start")
        policy = key_policy(key, {"S1": 4, "natural": 5})
        training = sum(t["phase"] == "training" for t in key["trials"])
        for _ in range(training + 3):
            if page.is_visible("#between"):
                page.click("#begin")
            answered(page, policy)
        page.reload()  # resumes where it stopped, in the same order
        page.wait_for_selector("#start:enabled")
        assert page.text_content("#start") == "Continue"
        page.click("#start")
        assert page.text_content("#progress-text").startswith("Trial 4 of ")
        while not page.is_visible("#done"):
            answered(page, policy)
        page.wait_for_selector("#server-complete")
        code = re.search(r"completion code: ([0-9A-F]{8})", page.text_content("#server-complete")).group(1)
        rater = page.text_content("#rater-shown")
        deadline = time.monotonic() + 30  # then the page goes to the platform (blocked here: outside the server)
        while not seen["blocked"] and time.monotonic() < deadline:
            page.wait_for_timeout(10)
        assert seen["blocked"] == [f"{DONE}?cc={code}&pid={rater}"], seen
        assert [e for e in seen["errors"] if DONE not in e] == [], seen
        admin = browser.new_context().new_page()  # the admin view, its token in the fragment
        admin_seen = watch(admin, server.base + "/")
        admin.goto(f"{server.base}/admin#token={(folder / 'server' / 'admin_token').read_text().strip()}")
        admin.wait_for_selector("#summary:has-text('1 finished')")
        assert admin_seen["errors"] == [] and admin_seen["blocked"] == []
        static = browser.new_context().new_page()  # from file:// the page works as before: no server, no request
        static_seen = watch(static, (folder / "site").resolve().as_uri())
        static.goto((folder / "site" / "index.html").resolve().as_uri())
        static.fill("#rater", "alice")
        static.click("#start")
        answer_trial(static, "mos", policy)
        assert static.text_content("#progress-text") == f"Training 2 of {training}" or static.is_visible("#between")
        assert static_seen["errors"] == [] and static_seen["blocked"] == [], static_seen
        with httpx.Client(base_url=server.base, timeout=20) as client:  # --open: a platform participant joins once
            joined = client.post("/api/join", json={"participant": "PID-123"}).json()
            state = client.get("/api/config", headers={"Authorization": f"Bearer {joined['token']}"}).json()
            assert state["rater_id"] == joined["rater_id"] and not state["finished"]
            assert client.post("/api/join", json={"participant": "PID-123"}).status_code == 409
            assert client.post("/api/join", json={"participant": "../x y"}).status_code == 422
    finally:
        browser.close()
        manager.stop()
        server.stop()
    assert cli(["listening-serve", str(folder), "--export"]) == 0
    [path] = (folder / "ratings").glob("server-*.json")
    sheet, problems = check_sheet(path, key)
    assert problems == [] and sheet.user_agent.startswith("Mozilla/")


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_raters_in_headless_chromium_complete_a_served_arena_test(arena_dir, tmp_path):
    """Two raters on the served arena page, each in its own browser context: every answer is acknowledged by the
    server before the page moves on, each finishes with a completion code, and the export ranks their order."""
    import playwright.sync_api as playwright_api

    from clonebench.report.browser import launch
    from tests.listening_browser import watch

    folder = tmp_path / "arena"
    shutil.copytree(arena_dir, folder, ignore=shutil.ignore_patterns("server", "ratings", "results.json"))
    (folder / "ratings").mkdir()
    key = load_key(folder)

    def policy(kind, clips, reference):
        a, b = (key["clips"][c] for c in clips)
        if "degraded" in (a["role"], b["role"]):
            return "B" if a["role"] == "degraded" else "A"
        return "A" if STRENGTH[a["system"]] > STRENGTH[b["system"]] else "B"

    server = Server(folder, "--raters", "2")
    manager = playwright_api.sync_playwright().start()
    browser = launch(manager)
    codes = []
    try:
        for link in server.links:
            page = browser.new_context().new_page()
            seen = watch(page, server.base + "/")
            page.goto(link.replace("/#", "/index.html#"))
            page.wait_for_selector("#start:enabled")
            page.click("#start")
            while not page.is_visible("#done"):
                if page.is_visible("#between"):
                    page.click("#begin")
                else:
                    answered(page, policy, "arena")
            page.wait_for_selector("#server-complete")
            codes.append(re.search(r"completion code: ([0-9A-F]{8})", page.text_content("#server-complete")).group(1))
            assert seen["errors"] == [] and seen["blocked"] == [], seen
    finally:
        browser.close()
        manager.stop()
        server.stop()
    assert len(set(codes)) == 2
    assert cli(["listening-serve", str(folder), "--export"]) == 0
    files = sorted((folder / "ratings").glob("server-*.json"))
    served = results(folder, files)
    assert served["raters"]["kept"] == 2
    assert [r["label"] for r in served["arena"]["systems"]] == ["fish", "s2cpp", "third"]


POLICY = object()  # the scripted answer, not a value given


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("kind", ["smos", "cmos", "mushra"])
def test_three_raters_complete_each_other_kind_served_and_the_export_recovers_the_difference(
        kind, runs, tmp_path, capsys):  # noqa: F811 (runs: the arena's fixture)
    """SMOS (a reference per trial), CMOS (an ordered pair) and MUSHRA (a list of ratings against a reference) go
    through the same server path as MOS: each answer validated against the trial shown, stored, exported to the
    ratings files that listening-results reads, and the scripted difference recovered from them."""
    from tests.listening_browser import TRUTH as PAGE_TRUTH
    from tests.listening_browser import key_policy

    out = tmp_path / kind
    assert cli(["listening-test", str(runs["run_a"]), str(runs["run_b"]), "--kind", kind, "--items", "2",
                "--output", str(out), "--seed", "5", "--checks", "1"]) == 0
    key = load_key(out)
    policy = key_policy(key, PAGE_TRUTH[kind])

    def answer(key, rater, shown, position, value=POLICY):
        heard = shown["clips"] + ([shown["reference"]] if shown["reference"] else [])
        record = {k: v for k, v in record_for(key, rater, shown, position).items() if k != "rating"}
        value = policy(kind, shown["clips"], shown["reference"]) if value is POLICY else value
        return record | {"plays": {c: 1 for c in heard}, "ends": {c: 1 for c in heard},
                         ("ratings" if kind == "mushra" else "rating"): value}

    server = Server(out, "--raters", "3")
    try:
        with httpx.Client(base_url=server.base, timeout=20) as client:  # an answer on another scale is refused
            auth = {"Authorization": f"Bearer {token_of(server.links[0])}"}
            shown = client.get("/api/config", headers=auth).json()["order"]["training"][0]
            lo, hi = (0, 100) if kind == "mushra" else (-3, 3) if kind == "cmos" else (1, 5)
            for bad in (3, [3], [3] * len(shown["clips"]) + [3], [hi + 1] * len(shown["clips"]), [1.5]) \
                    if kind == "mushra" else (hi + 1, lo - 1, [lo], "3", 2.5, True, None):
                reply = client.post("/api/answer", headers=auth,
                                    json={"phase": "training", "record": answer(key, "x", shown, 0, bad)})
                assert reply.status_code == 422 and "rating" in reply.text, (bad, reply.text)
            assert client.get("/api/config", headers=auth).json()["answered"] == {"training": [], "test": []}
        with ThreadPoolExecutor(3) as pool:
            done = list(pool.map(lambda link: rate(server.base, key, token_of(link), answer=answer), server.links))
        assert all(len(d["test"]) == len(d["order"]["test"]) for d in done)
        assert cli(["listening-serve", str(out), "--export"]) == 0
    finally:
        server.stop()
    capsys.readouterr()
    files = sorted((out / "ratings").glob("server-*.json"))
    assert len(files) == 3 and all(check_sheet(f, key)[1] == [] for f in files)
    served = results(out, files)
    assert served["raters"]["kept"] == 3
    if kind == "cmos":
        [row] = served["cmos"]
        assert (row["first"], row["second"], row["mean"]) == ("S1", "S2", -2.0)
    else:
        assert {r["condition"]: r["mean"] for r in served["scores"]} == PAGE_TRUTH[kind]
