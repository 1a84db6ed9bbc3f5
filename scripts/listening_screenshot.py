#!/usr/bin/env python
"""A screenshot of a listening-test page (clonebench listening-test) for the README, taken with the system's
headless Chromium through Playwright for Python (never `playwright install`).

    python scripts/listening_screenshot.py TEST/site/index.html --output docs/listening.png [--width 1000]
        [--height 520]

The script enters a rater id, answers the training trials, starts the test and, on its first trial, plays every
clip and gives an answer (sliders for MUSHRA), so the picture shows a trial being rated. The PNG gets a
128-colour palette. Nothing it does is saved as ratings.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from clonebench.report.browser import launch, save_screenshot  # noqa: E402


def answer(page, kind: str) -> None:
    """Play every clip of the trial shown and answer it (without moving on)."""
    for button in page.locator("#trial button.play").all():
        button.click()
    if kind == "mushra":
        sliders = page.locator("#answer input[type=range]")
        for k in range(sliders.count()):
            sliders.nth(k).fill(str([84, 100, 57, 23, 68, 41][k % 6]))
    else:
        radios = page.locator("#answer input[type=radio]")
        radios.nth(1).check()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--width", type=int, default=1000)
    parser.add_argument("--height", type=int, default=520)
    args = parser.parse_args(argv)
    import json

    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        page.goto(args.page.resolve().as_uri())
        kind = json.loads(page.locator("#test-config").text_content())["kind"]
        page.fill("#rater", "readme-rater")
        page.click("#start")
        while not page.is_visible("#between"):
            answer(page, kind)
            page.click("#next")
        page.click("#begin")
        answer(page, kind)
        page.evaluate("document.querySelectorAll('#trial audio').forEach(a => a.pause())")
        page.evaluate("document.querySelectorAll('#trial .playing').forEach(b => b.classList.remove('playing'))")
        save_screenshot(page, args.output)
        browser.close()
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
