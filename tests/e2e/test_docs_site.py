"""The documentation: README.md stays a short front page, the pages under docs/ build as a strict mkdocs-material
site (every page in the nav, every link and anchor resolving), and the paths they name exist.

Which printed commands run where is tests/e2e/test_readme_commands.py's (README.md and docs/ alike)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO

README_MAX_LINES = 250
DOC_FILES = [REPO / "README.md", REPO / "DEVELOPERS.md", *sorted((REPO / "docs").rglob("*.md"))]
ROOMS = {p.name for p in (REPO / "src" / "clonebench").iterdir() if p.is_dir() and not p.name.startswith("_")}


def test_mkdocs_build_is_strict_clean(tmp_path):
    try:
        import material  # noqa: F401  (mkdocs-material)
        import mkdocs  # noqa: F401
    except ImportError:
        pytest.fail("mkdocs / mkdocs-material are missing: run `bash scripts/setup.sh` (the `docs` extra)")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"),
                           "-d", str(tmp_path / "site")], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    pages = sorted(p.relative_to(REPO / "docs").with_suffix("") for p in (REPO / "docs").rglob("*.md"))
    for page in pages:
        built = tmp_path / "site" / ("index.html" if page.name == "index" else f"{page}/index.html")
        assert built.is_file(), built
    _code_blocks_fit_at_1280_px(tmp_path / "site")
    _search_indexes_the_words_newcomers_type(tmp_path / "site")


def _code_blocks_fit_at_1280_px(site):
    """No code block of any page scrolls sideways in a 1280 px wide window (docs/stylesheets/extra.css wraps them)."""
    from playwright.sync_api import sync_playwright

    from clonebench.report.browser import launch

    with sync_playwright() as manager:
        browser = launch(manager)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        blocks, wide = 0, {}
        for html in sorted(site.rglob("index.html")):
            page.goto(html.as_uri())
            scrolls = page.evaluate("Array.from(document.querySelectorAll('.md-content pre > code'))"
                                    ".map(c => c.scrollWidth > c.clientWidth + 1)")
            blocks += len(scrolls)
            if any(scrolls):
                wide[str(html.relative_to(site))] = sum(scrolls)
        browser.close()
    assert blocks > 40 and wide == {}


def _search_indexes_the_words_newcomers_type(site):
    """The search index holds the pages a newcomer searches for, as tokens of its own separator."""
    import json

    index = json.loads((site / "search" / "search_index.json").read_text())
    separator = re.compile(index["config"]["separator"])
    tokens = {t.lower() for doc in index["docs"] for t in separator.split(doc["title"] + " " + doc["text"])}
    assert {"quickstart", "faq", "changelog", "troubleshooting", "resume"} <= tokens
    assert {t for t in separator.split("vc.resume_from") if t} == {"vc", "resume", "from"}  # query splits alike


def test_readme_is_short_and_the_docs_have_the_pages():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= README_MAX_LINES
    pages = {p.name for p in (REPO / "docs").glob("*.md")}
    assert len(pages) >= 10
    assert {"index.md", "servers.md", "scoring.md", "score-folders.md", "suites.md", "gpu.md", "runs.md",
            "reproduce-libritts16.md", "report.md", "listening-tests.md", "configuration.md", "security.md",
            "statistics.md", "performance.md", "architecture.md", "glossary.md"} <= pages


def test_readme_links_resolve_and_reach_every_page():
    readme = (REPO / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if not re.match(r"[a-z]+:", t)]
    assert [t for t in local if not (REPO / t).exists()] == []
    linked = {t for t in local if t.startswith("docs/") and t.endswith(".md")}
    pages = {f"docs/{p.relative_to(REPO / 'docs')}" for p in (REPO / "docs").rglob("*.md")}
    assert linked == pages  # the documentation table


def test_only_tested_fences_hold_commands():
    """Runnable commands go in ```text blocks, each run by a test (test_readme_commands.py); the README's two set-up
    commands are its one ```sh block. A ```bash / ```sh / ```shell block elsewhere would escape that check."""
    for path in DOC_FILES:
        fences = re.findall(r"^[ \t]*```(\w+)", path.read_text(), re.M)
        allowed = {"text", "console", "python", "yaml", "json"}
        if path.name == "README.md":
            assert fences.count("sh") == 1, path
            allowed.add("sh")
        assert set(fences) <= allowed, (path, set(fences) - allowed)


def _named_paths(text: str) -> set[str]:
    """Repository paths named in code spans: ``src/...``, ``tests/...``, ``bench/...``, ``scripts/...``, ``configs/...``,
    and ``<room>/<module>.py`` (under src/clonebench/)."""
    found = set()
    for span in re.findall(r"`([^`\n]+)`", text):
        span = span.strip()
        if any(mark in span for mark in (" ", "<", "*", "{", "...")):  # placeholders and patterns
            continue
        head = span.split("/", 1)[0]
        if "/" in span and (head in {"src", "tests", "bench", "scripts", "configs"} or head in ROOMS):
            found.add(span.rstrip("/"))
    return found


def _resolves(dotted: str) -> bool:
    """``clonebench.room.module[.name]``: the module exists, and a name after it is defined there."""
    parts = dotted.split(".")[1:]
    here = REPO / "src" / "clonebench"
    for k, part in enumerate(parts):
        if (here / part).is_dir():
            here = here / part
        elif (here / f"{part}.py").is_file():
            rest = parts[k + 1:]
            text = (here / f"{part}.py").read_text()
            return not rest or bool(re.search(rf"^\s*(def|class|async def) {rest[0]}\b|^{rest[0]}\s*[:=]", text, re.M))
        else:
            return False
    return True


def test_paths_named_in_the_docs_exist():
    """Module paths in README.md, DEVELOPERS.md and docs/ are the package's current ones (no stale suite_pipeline.py):
    each resolves from the repository root or, for ``<room>/...``, under src/clonebench/; and each dotted
    ``clonebench.<room>.<module>[.<name>]`` names a module (and a name defined in it)."""
    missing = {}
    for path in DOC_FILES:
        text = path.read_text()
        for name in _named_paths(text):
            if not ((REPO / name).exists() or (REPO / "src" / "clonebench" / name).exists()):
                missing.setdefault(path.name, []).append(name)
        for dotted in set(re.findall(r"`(clonebench(?:\.\w+)+)`", text)):
            if not _resolves(dotted):
                missing.setdefault(path.name, []).append(dotted)
    assert missing == {}
