#!/usr/bin/env python
"""A screenshot of an HTML report (clonebench report --format html) for the README, taken with the system's
headless Chromium through Playwright for Python (never `playwright install`).

    python scripts/report_screenshot.py RUN/report/index.html --output docs/report.png [--width 1280]
        [--height 900] [--at samples]

``--at`` scrolls to a section of the page first (table, plots, samples, provenance, coverage). The PNG is
written after every audio element is playable, so the players show their durations, with a 128-colour palette.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from clonebench.report.browser import launch, save_screenshot  # noqa: E402


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--at", default=None, help="id of the section to scroll to")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        page.goto(args.page.resolve().as_uri())
        page.wait_for_function("Array.from(document.querySelectorAll('audio')).every(a => a.readyState >= 2)",
                               timeout=30_000)
        if args.at:
            page.evaluate("id => document.getElementById(id).scrollIntoView()", args.at)
        save_screenshot(page, args.output)
        browser.close()
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
