"""The reference pages generated from the code (docs/reference/cli.md, config.md) are what the code gives now:
``scripts/build_reference.py --check`` regenerates them and fails on any difference (run the script to update)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from omegaconf import OmegaConf

from tests.conftest import REPO


def builder():
    spec = importlib.util.spec_from_file_location("build_reference", REPO / "scripts" / "build_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_reference_pages_are_up_to_date(capsys):
    assert builder().main(["--check"]) == 0, capsys.readouterr().out + " (run: python scripts/build_reference.py)"


def test_the_reference_pages_hold_nothing_of_the_machine_that_built_them():
    """A help text naming this checkout's absolute path makes the committed page stale on every other clone."""
    for page in ("cli.md", "config.md"):
        text = (REPO / "docs" / "reference" / page).read_text()
        for marker in {str(REPO), str(REPO.parent), str(Path.home())} - {"/"}:
            assert marker not in text.replace("\n", ""), f"{page} names {marker}"


def test_the_check_sees_a_stale_page(tmp_path, capsys):
    (tmp_path / "cli.md").write_text("stale\n")
    assert builder().main(["--check", "--output", str(tmp_path)]) == 1
    assert "out of date" in capsys.readouterr().out and (tmp_path / "cli.md").read_text() == "stale\n"


def test_the_config_reference_has_every_key_of_every_file():
    """The page's key list (read from the YAML nodes, for their comments) equals OmegaConf's reading of each file."""
    build = builder()

    def leaves(node, prefix=""):
        for key, value in node.items():
            if key in ("defaults", "hydra"):
                continue
            if isinstance(value, dict) and value:
                yield from leaves(value, f"{prefix}{key}.")
            else:
                yield f"{prefix}{key}"

    for path in sorted((REPO / "configs").rglob("*.yaml")):
        raw = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
        assert [k for k, _, _ in build.config_keys(path)] == list(leaves(raw)), path


def test_every_subcommand_and_key_has_its_section_and_meaning():
    from clonebench.cli.main import SUBCOMMANDS

    cli = (REPO / "docs" / "reference" / "cli.md").read_text()
    assert all(f"## clonebench {name}\n" in cli for name in SUBCOMMANDS)
    rows = [r for r in (REPO / "docs" / "reference" / "config.md").read_text().splitlines() if r.startswith("| `")]
    assert rows and [r for r in rows if r.endswith("|  |")] == []  # every key says what it means
