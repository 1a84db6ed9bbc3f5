"""Opening an HTML report in the system's headless Chromium (Debian ``chromium``) through Playwright for
Python. Playwright's own browser downloads are never used: the executable is given explicitly, and the
flags turn off every background request Chromium makes on its own."""

from __future__ import annotations

import shutil
from pathlib import Path

from clonebench.core.errors import ClonebenchError

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def chromium_path() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    if Path("/usr/bin/chromium").is_file():
        return "/usr/bin/chromium"
    raise ClonebenchError("no chromium executable: install Debian's chromium (bash scripts/setup.sh, as root)")


def launch(playwright):
    """A headless Chromium browser from ``sync_playwright()``'s object."""
    return playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)


def save_screenshot(page, output: Path) -> None:
    """``page`` as a PNG at ``output``, quantised to a 128-colour palette (small enough to keep in docs/; pillow
    comes with matplotlib)."""
    from PIL import Image

    output.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(output))
    Image.open(output).convert("RGB").quantize(colors=128).save(output, optimize=True)
