"""Waiting on a condition in a page whose Content-Security-Policy forbids eval (the report and listening pages).

Playwright's ``page.wait_for_function`` with a string polls by ``eval`` inside the page, which such a policy refuses
whenever the condition is not already true at the first look: a race that fails only on a slow machine. This polls
``page.evaluate`` instead (the DevTools protocol's own evaluation, outside the page's policy)."""

from __future__ import annotations

import time


def wait_until(page, expression: str, timeout_s: float = 30.0, every_s: float = 0.05):
    """Evaluate ``expression`` until it is truthy; return its value, or fail naming the expression."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = page.evaluate(expression)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout_s:.0f} s in the page: {expression}")
        time.sleep(every_s)
