"""Opening an HTML report in headless Chromium (Debian's chromium, Playwright for Python) for the tests."""

from __future__ import annotations

import json
import re
from pathlib import Path

import playwright.sync_api as playwright_api  # pip install playwright (scripts/setup.sh); never `playwright install`

from tests.browser_wait import wait_until


def open_report(page_path: Path, width: int = 1400):
    """Load the page in a ``width`` px wide window; collect console errors, page errors and every request; block
    anything not file://."""
    manager = playwright_api.sync_playwright().start()
    from clonebench.report.browser import launch

    browser = launch(manager)
    page = browser.new_page(viewport={"width": width, "height": 1000})
    seen = {"errors": [], "requests": [], "blocked": []}
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("requestfailed", lambda r: seen["errors"].append(f"failed: {r.url}"))
    page.on("request", lambda r: seen["requests"].append(r.url))
    page.route(re.compile(r"^(?!file:)"), lambda route: (seen["blocked"].append(route.request.url), route.abort()))
    page.goto(page_path.resolve().as_uri())
    wait_until(page, "Array.from(document.querySelectorAll('audio')).every(a => a.readyState >= 2)")

    def close():
        browser.close()
        manager.stop()
    return page, seen, close


def column(page, title: str) -> list[float]:
    index = page.evaluate(f"""Array.from(document.querySelectorAll('#samples-table thead th'))
                              .findIndex(h => h.dataset.key === {json.dumps(title)})""")
    assert index >= 0, title
    values = page.evaluate(f"""Array.from(document.querySelectorAll('#samples-table tbody tr'))
                               .map(r => r.cells[{index}].dataset.v)""")
    return [float(v) for v in values if v]


def page_overflow(page) -> int:
    """How many px the page itself scrolls sideways (0: it does not; a wide table scrolls in its own box)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def header_right_edges(page, prefix: str) -> list[float]:
    """The right edge (px from the window's left) of each samples-table header whose title starts with ``prefix``."""
    return page.evaluate(f"""Array.from(document.querySelectorAll('#samples-table thead th'))
                             .filter(h => h.textContent.startsWith({json.dumps(prefix)}))
                             .map(h => h.getBoundingClientRect().right)""")
