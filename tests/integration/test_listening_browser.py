"""Listening-test pages in a real headless Chromium (Debian's chromium via Playwright for Python, one browser for
the module): a scripted rater completes every kind and downloads the ratings file, a second rater sees another
order, the results recover the scripted difference, and the page follows the report's security rules."""

from __future__ import annotations

import functools
import hashlib
import json
import re
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import playwright.sync_api as playwright_api  # never `playwright install`: Debian's chromium
import pytest

from clonebench.cli.main import main as cli
from clonebench.listening.ratings import check_sheet, load_key
from tests.browser_wait import wait_until
from tests.listening_browser import TRUTH, answer_trial, complete, key_policy, shown_clips, watch
from tests.listening_runs import generation_runs

HOSTILE = "Rate <script>window.__pwned = 1</script> & </script><!-- <b>this</b>"


@pytest.fixture(scope="module")
def runs(tmp_path_factory, demo_dataset):
    return generation_runs(tmp_path_factory.mktemp("listening_runs"), demo_dataset)


@pytest.fixture(scope="module")
def browser():
    from clonebench.report.browser import launch

    manager = playwright_api.sync_playwright().start()
    chromium = launch(manager)
    yield chromium
    chromium.close()
    manager.stop()


def make_test(runs, out: Path, kind: str, *extra: str) -> dict:
    assert cli(["listening-test", str(runs["run_a"]), str(runs["run_b"]), "--kind", kind, "--items", "2",
                "--output", str(out), "--seed", "5", "--checks", "1", *extra]) == 0
    return load_key(out)


def new_page(browser, inside: str):
    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    return context, page, watch(page, inside)


def trial_order(path: Path) -> list[str]:
    return [r["trial"] for r in json.loads(path.read_text())["ratings"]["trials"]]


def serve(folder: Path) -> tuple[ThreadingHTTPServer, str]:
    """A static host on loopback for ``folder`` (stop it with .shutdown())."""
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mos", "smos", "cmos", "mushra"])
def test_a_scripted_rater_completes_each_kind_and_the_results_recover_the_difference(kind, runs, browser, tmp_path,
                                                                                    capsys):
    """From file:// (MUSHRA: from a static HTTP host on loopback): the whole test, the download, the results."""
    out = tmp_path / kind
    key = make_test(runs, out, kind)
    server, site = serve(out / "site") if kind == "mushra" else (None, (out / "site").resolve().as_uri() + "/")
    context, page, seen = new_page(browser, site)
    try:
        path = complete(page, site + "index.html", "alice", key_policy(key, TRUTH[kind]), out / "ratings")
        assert seen["errors"] == [] and seen["blocked"] == [], seen
        assert any(u.endswith(".wav") for u in seen["requests"]) and all(u.startswith(site) for u in seen["requests"])
        assert page.locator("#progress").evaluate("p => p.value === p.max")
    finally:
        context.close()
        if server:
            server.shutdown()
    sheet, problems = check_sheet(path, key)  # the whole file; its integrity digest (computed in JS) verifies
    assert problems == [] and sheet.user_agent.startswith("Mozilla/")
    ratings = json.loads(path.read_text())["ratings"]
    assert (ratings["test_id"], ratings["kind"], ratings["rater_id"]) == (key["test_id"], kind, "alice")
    assert len(ratings["training"]) == sum(t["phase"] == "training" for t in key["trials"])
    for position, record in enumerate(ratings["trials"]):
        assert record["position"] == position and record["answered_ms"] >= record["shown_ms"] >= 0
        assert all(record["plays"][c] >= 1 for c in record["clips"] + ([record["reference"]] if record["reference"] else []))
    capsys.readouterr()
    assert cli(["listening-results", str(out), str(path), "--format", "csv"]) == 0
    summary = json.loads((out / "results.json").read_text())
    assert summary["raters"] == {"given": 1, "kept": 1, "excluded": []}
    if kind == "cmos":
        [row] = summary["cmos"]
        assert (row["first"], row["second"], row["mean"]) == ("S1", "S2", -2.0)
    else:
        assert {r["condition"]: r["mean"] for r in summary["scores"]} == TRUTH[kind]
    assert f"{key['test_id']},{kind}" in capsys.readouterr().out


@pytest.mark.slow
def test_another_rater_sees_another_order_and_one_rater_always_one(runs, browser, tmp_path):
    out = tmp_path / "mos"
    key = make_test(runs, out, "mos")
    site = (out / "site").resolve().as_uri() + "/"
    policy = key_policy(key, TRUTH["mos"])
    context, page, seen = new_page(browser, site)
    try:
        files = [complete(page, site + "index.html", rater, policy, tmp_path) for rater in ("alice", "bob")]
        assert sorted(trial_order(files[0])) == sorted(trial_order(files[1]))
        assert trial_order(files[0]) != trial_order(files[1])
        page.goto(site + "index.html?rater=alice")  # the same id again, given in the URL: the same order
        assert page.input_value("#rater") == "alice"
        page.click("#start")
        while not page.is_visible("#between"):
            answer_trial(page, "mos", policy)
        page.click("#begin")
        assert shown_clips(page)[0] == json.loads(files[0].read_text())["ratings"]["trials"][0]["clips"]
        assert seen["errors"] == [] and seen["blocked"] == []
    finally:
        context.close()


@pytest.mark.slow
def test_the_page_reveals_no_system_escapes_text_and_stays_in_its_folder(runs, browser, tmp_path):
    out = tmp_path / "test"
    key = make_test(runs, out, "cmos", "--title", HOSTILE, "--label", "SysAlpha</script>", "--label", "SysBeta")
    site = out / "site"
    assert not (site / "key.json").exists() and (out / "key.json").is_file()
    names = sorted(p.name for p in (site / "clips").iterdir())
    assert all(re.fullmatch(r"c[0-9a-f]{20}\.wav", n) for n in names) and len(names) == len(key["clips"])
    secrets = ["SysAlpha", "SysBeta", "run_a", "run_b", str(runs["run_a"]), "demo-10", "1001", "natural", "anchor",
               "degraded", "repeat", "check"]
    page_text = (site / "index.html").read_text()
    assert [s for s in secrets if s in page_text] == []
    for path in (site / "clips").iterdir():  # RIFF with fmt and data only: no INFO/LIST chunk, no name anywhere
        data, chunks, pos = path.read_bytes(), [], 12
        while pos + 8 <= len(data):
            chunks.append(data[pos:pos + 4])
            pos += 8 + int.from_bytes(data[pos + 4:pos + 8], "little")
        assert chunks == [b"fmt ", b"data"]
    html = (site / "index.html").read_text()
    config = html.split('<script type="application/json" id="test-config">')[1].split("</script>")[0]
    assert "<" not in config and json.loads(config)["test_id"] == key["test_id"]
    inside = site.resolve().as_uri() + "/"
    context, page, seen = new_page(browser, inside)
    try:
        page.goto(inside + "index.html?rater=" + "%3Cimg%20src%3Dx%20onerror%3Dwindow.__pwned%3D2%3E")
        assert page.title() == HOSTILE and page.locator("h1").text_content() == HOSTILE
        assert page.input_value("#rater") == "<img src=x onerror=window.__pwned=2>"
        page.click("#start")  # refused: not a rater id; the page shows why and stays put
        assert "rater id" in page.text_content("#rater-error") and page.is_visible("#welcome")
        assert page.evaluate("window.__pwned") is None and page.locator("img").count() == 0
        assert page.evaluate("document.querySelector('h1').children.length") == 0
        strings = ["", "abc", "a" * 55, "b" * 56, "c" * 64, "d" * 119, "Ünïcødé — 声音 🎧 " * 9]
        hashed = page.evaluate("s => s.map(x => listeningSha256.hex(x))", strings)
        assert hashed == [hashlib.sha256(s.encode()).hexdigest() for s in strings]
        assert seen["errors"] == [] and seen["blocked"] == []
        assert all(u.startswith(inside) for u in seen["requests"])
    finally:
        context.close()


@pytest.mark.slow
def test_a_clip_that_cannot_load_stops_its_trial_with_a_message(runs, browser, tmp_path):
    out = tmp_path / "mos"
    key = make_test(runs, out, "mos")
    first = next(t for t in key["trials"] if t["phase"] == "training")  # the page shows training in key order
    (out / "site" / "clips" / f"{first['clips'][0]}.wav").unlink()
    site = (out / "site").resolve().as_uri() + "/"
    context, page, seen = new_page(browser, site)
    try:
        page.goto(site + "index.html")
        page.fill("#rater", "erin")
        page.click("#start")
        wait_until(page, "document.getElementById('hint').textContent.includes('could not be loaded')")
        assert page.is_disabled("#next") and page.is_disabled(f"button[data-clip='{first['clips'][0]}']")
        assert any(first["clips"][0] in e for e in seen["errors"])  # the failed load, and nothing else
        assert all(first["clips"][0] in e or "ERR_FILE_NOT_FOUND" in e for e in seen["errors"]), seen["errors"]
    finally:
        context.close()
