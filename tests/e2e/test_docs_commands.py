"""The rules for commands printed in README.md and docs/ (beside test_readme_commands.py, which runs the ```text ones).

Placeholders: in a ```text command, a placeholder is a lowercase name in angle brackets, defined once in the
glossary's "Placeholders" table; a page that prints one links to that table.

Inline code spans (```` `...` ```` in prose) that start with a program a reader runs (``clonebench``, ``python``,
``make``, ``bash``, ``pip``, ``rvcbench``, ``uv``) are one of:
- a *name*: the program, at most one subcommand/target and at most one bare flag (```clonebench score```,
  ```rvcbench score --seed```, ```python -m clonebench.standin```): it names a tool, nothing to run; a ``clonebench``
  subcommand named must exist;
- a *usage line*: it holds usage notation (an UPPERCASE argument, ``<placeholder>``, ``[optional]``, ``...`` or
  ``a|b``): a ``clonebench`` usage line's subcommand and each ``--option`` it names must exist in the parser;
- a *command*: anything else. A command a reader is told to run is run by a test: it is printed identically in a
  fenced block (```text, run by test_readme_commands.py or the e2e file that declares it; ```sh, the README's two),
  or listed in INLINE_RUN_ELSEWHERE (the test file that runs it) or INLINE_NOT_RUN (why it cannot run in a test).
"""

from __future__ import annotations

import re
import shlex

from clonebench.cli.main import build_parser
from tests.conftest import REPO
from tests.e2e.test_readme_commands import doc_files, text_block_commands, text_block_commands_by_file

PROGRAMS = ("clonebench", "python", "python3", "make", "bash", "pip", "rvcbench", "uv")
USAGE = re.compile(r"\b[A-Z][A-Z0-9_]+\b|<[^>]+>|\[|\.\.\.|\|")
PLACEHOLDER = re.compile(r"<[a-z][a-z0-9_ -]*>")

INLINE_RUN_ELSEWHERE = {
    "python -m mkdocs build --strict": "tests/e2e/test_docs_site.py",
}
INLINE_NOT_RUN = {
    "pip install -e '.[docs]'": "an install step; scripts/setup.sh installs the docs extra",
    "pip install -e '.[serve]'": "an install step; scripts/setup.sh installs the serve extra",
    "pip install -e '.[paper-metrics]'": "an install step of the optional paper metrics (hub weights)",
    "python -m mkdocs serve": "a server that runs until stopped; the site it serves is built by test_docs_site.py",
    "bash scripts/setup.sh": "the installer itself, which `make demo` and `make test` run first",
    "clonebench manifest reproduction/subsets/libritts16_v1/metadata.json --root /data/LibriTTS_eval": "needs "
        "LibriTTS at /data/LibriTTS_eval; the subcommand runs on manifests in tests/integration/test_cli_manifest.py",
    "bash bench/gpu_check_pack.sh .gpu_pack": "packs the one-shot GPU check for a GPU machine (docs/gpu.md)",
    "python -m clonebench.standin --listen 127.0.0.1:18011": "a server that runs until stopped; the cluster recipe's "
        "test (tests/e2e/test_slurm_cluster.py) starts the stand-in on a free loopback port instead",
    "python -m clonebench.standin --protocol cosyvoice": "a server that runs until stopped; "
        "tests/integration/test_cosyvoice_protocol.py runs it",
    "python -m clonebench.standin --protocol zonos2": "a server that runs until stopped; "
        "tests/integration/test_zonos2_protocol.py runs it",
}


def prose(text: str) -> str:
    """A page without its fenced blocks."""
    return re.sub(r"^[ \t]*(```+|~~~+)[^\n]*\n.*?^[ \t]*\1[ \t]*$", "", text, flags=re.S | re.M)


def inline_spans() -> dict[str, list[str]]:
    """{page: the inline code spans of its prose that start with a program}, in page order."""
    out = {}
    for path in doc_files():
        spans = re.findall(r"(?<!`)`([^`\n]+)`(?!`)", prose(path.read_text()))
        out[str(path.relative_to(REPO))] = [s.strip() for s in spans if s.split()[0] in PROGRAMS]
    return out


def classify(span: str) -> str:
    if USAGE.search(span):
        return "usage"
    words = span.split()
    rest = words[2:] if words[:2] in (["python", "-m"], ["python3", "-m"]) else words[1:]
    flags = [w for w in rest if w.startswith("-")]
    if len(rest) - len(flags) <= 1 and len(flags) <= 1 and (not flags or rest[-1] == flags[0]):
        return "name"
    return "command"


def fenced_commands() -> set[str]:
    """Every command printed in a ```text block, and the README's ```sh block."""
    readme = re.search(r"```sh\n(.*?)```", (REPO / "README.md").read_text(), re.S).group(1)
    return set(text_block_commands()) | {line.strip() for line in readme.splitlines() if line.strip()}


def test_the_rule_sorts_the_examples_of_the_docstring():
    assert classify("clonebench score") == classify("rvcbench score --seed") == "name"
    assert classify("python -m clonebench.standin") == "name"
    assert classify("clonebench repeat RUN [--count 3]") == classify("python bench/<script>.py") == "usage"
    assert classify("python -m clonebench.standin --protocol zonos2") == "command"
    assert classify("clonebench doctor --eval --device cuda") == "command"


def test_every_inline_command_is_run_or_listed():
    fenced = fenced_commands()
    unrun = {page: [s for s in spans if classify(s) == "command" and s not in fenced
                    and s not in INLINE_RUN_ELSEWHERE and s not in INLINE_NOT_RUN]
             for page, spans in inline_spans().items()}
    assert {page: found for page, found in unrun.items() if found} == {}
    printed = {s for spans in inline_spans().values() for s in spans}
    assert set(INLINE_NOT_RUN) | set(INLINE_RUN_ELSEWHERE) <= printed, "listed inline commands no page prints any more"
    for command, test_file in INLINE_RUN_ELSEWHERE.items():
        assert command.split()[-1] in (REPO / test_file).read_text(), (command, test_file)


def test_clonebench_names_and_usage_lines_match_the_parser():
    """``clonebench X`` in prose names a subcommand that exists, and a usage line's --options exist for it."""
    parser, _ = build_parser()
    subparsers = next(a for a in parser._actions if hasattr(a, "choices") and isinstance(a.choices, dict)).choices
    wrong = []
    for page, spans in inline_spans().items():
        for span in spans:
            words = span.replace("|", " ").split()
            if words[0] != "clonebench" or len(words) < 2 or USAGE.fullmatch(words[1]) or words[1].startswith("-"):
                continue
            if words[1] not in subparsers:
                wrong.append((page, span, "no such subcommand"))
                continue
            options = {o for a in subparsers[words[1]]._actions for o in a.option_strings}
            for word in words[2:]:
                flag = word.strip("[]").split("=")[0]
                if flag.startswith("--") and flag not in options:
                    wrong.append((page, span, f"no option {flag}"))
    assert wrong == []


def glossary_placeholders() -> set[str]:
    section = (REPO / "docs" / "glossary.md").read_text().split("## Placeholders", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {p for row in rows for p in PLACEHOLDER.findall(row.split("|")[1])}


def test_every_placeholder_is_defined_once_in_the_glossary_and_linked():
    defined = glossary_placeholders()
    assert {"<stamp>", "<id>", "<run_name>", "<pairs>"} <= defined
    for page, commands in text_block_commands_by_file().items():
        used = {p for command in commands for p in PLACEHOLDER.findall(command)}
        assert used <= defined, f"{page} prints placeholders the glossary does not define: {used - defined}"
        if used and page != "docs/glossary.md":
            link = "glossary.md#placeholders"
            assert link in (REPO / page).read_text(), f"{page} prints {sorted(used)} without a link to {link}"


def test_text_block_commands_split_as_a_shell_would():
    """Every ```text command is one shell command line (quotes balanced), so it can be run as printed."""
    for command in text_block_commands():
        shlex.split(command.replace("*", "x"))


def error_classes() -> set[str]:
    """The names of every exception class under src/clonebench that derives from ClonebenchError (read from the
    source: importing every module would load the models' libraries)."""
    import ast

    bases = {}
    for path in (REPO / "src" / "clonebench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]

    def ours(name, seen=()):
        return name == "ClonebenchError" or (name in bases and name not in seen
                                             and any(ours(b, (*seen, name)) for b in bases[name]))
    return {name for name in bases if ours(name)} - {"ClonebenchError"}


def test_troubleshooting_names_every_error_the_code_raises():
    page = (REPO / "docs" / "troubleshooting.md").read_text()
    rows = {name for row in page.splitlines() if row.startswith("| `") for name in re.findall(r"`(\w+)`", row.split("|")[1])}
    classes = error_classes()
    assert len(classes) >= 15
    assert classes - rows == set(), "error classes the troubleshooting page does not explain"
    assert rows - classes == set(), "the troubleshooting page explains errors the code no longer has"
