"""A scripted rater for the listening-test page, in headless Chromium (Debian's chromium via Playwright for Python,
as the report's browser tests): it enters a rater id, plays every clip, answers from a policy, goes through the
training and the test, and downloads its ratings file."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable

# answer(kind, clip ids as shown, reference clip id or None) -> an int (MOS, SMOS, CMOS) or one int per clip (MUSHRA)
Policy = Callable[[str, list[str], str | None], object]

TRUTH = {  # what the scripted rater answers per condition: run_a (S1) clearly better than run_b (S2)
    "mos": {"S1": 4, "S2": 2, "natural": 5},
    "smos": {"S1": 4, "S2": 2, "natural": 5},
    "cmos": {"S1": 4, "S2": 2, "natural": 5},
    "mushra": {"S1": 70, "S2": 40, "natural": 100, "anchor": 15},
}


def watch(page, inside: str) -> dict:
    """Collect console errors, page errors and requests; abort (and record) any request outside ``inside``."""
    seen = {"errors": [], "requests": [], "blocked": []}
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    # a clip still loading when the rater moves on is cancelled (net::ERR_ABORTED): not an error; any other is
    page.on("requestfailed", lambda r: None if "ERR_ABORTED" in (r.failure or "") else
            seen["errors"].append(f"failed: {r.url} ({r.failure})"))
    page.on("request", lambda r: seen["requests"].append(r.url))
    page.route(re.compile("^(?!" + re.escape(inside) + ")"),
               lambda route: (seen["blocked"].append(route.request.url), route.abort()))
    return seen


def shown_clips(page) -> tuple[list[str], str | None]:
    ids = page.evaluate("""Array.from(document.querySelectorAll('#trial button.play'))
                           .map(b => [b.textContent, b.dataset.clip])""")
    reference = next((c for text, c in ids if text.endswith("Reference")), None)
    return [c for text, c in ids if not text.endswith("Reference")], reference


def answer_trial(page, kind: str, policy: Policy) -> None:
    for button in page.locator("#trial button.play").all():
        button.click()
    clips, reference = shown_clips(page)
    value = policy(kind, clips, reference)
    if kind == "mushra":
        sliders = page.locator("#answer input[type=range]")
        for k, rating in enumerate(value):
            sliders.nth(k).fill(str(rating))
    else:
        page.check(f"#answer input[type=radio][value='{value}']")
    assert page.is_enabled("#next")
    page.click("#next")


def complete(page, url: str, rater: str, policy: Policy, downloads: Path) -> Path:
    """Do the whole test as ``rater``; return the downloaded ratings file (saved under ``downloads``)."""
    page.goto(url)
    kind = json.loads(page.locator("#test-config").text_content())["kind"]
    page.fill("#rater", rater)
    page.click("#start")
    while not page.is_visible("#done"):
        if page.is_visible("#between"):
            page.click("#begin")
        else:
            answer_trial(page, kind, policy)
    with page.expect_download() as download:
        page.click("#download")
    target = downloads / download.value.suggested_filename
    download.value.save_as(target)
    return target


def key_policy(key: dict, truth: dict[str, float], degraded: float = 1) -> Policy:
    """Answers from the key (which the page never has): a fixed score per system, checks answered correctly."""
    def score(clip: str) -> float:
        record = key["clips"][clip]
        if record["role"] in ("degraded", "other_speaker"):
            return degraded
        return truth[record["system"] or record["role"]]  # training clips have no system: natural, anchor

    def policy(kind, clips, reference):
        if kind == "mushra":
            return [int(score(c)) for c in clips]
        if kind == "cmos":
            return int(max(-3, min(3, round(score(clips[1]) - score(clips[0])))))
        return int(score(clips[0]))
    return policy
