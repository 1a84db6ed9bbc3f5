"""LICENSE, CHANGELOG.md and CITATION.cff agree with pyproject.toml: one version, one licence."""

from __future__ import annotations

import re
import tomllib

import yaml

import clonebench
from tests.conftest import REPO


def project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_one_version_everywhere():
    version = project()["version"]
    newest = re.search(r"^## (\d+\.\d+\.\d+)\b", (REPO / "CHANGELOG.md").read_text(), re.M).group(1)
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert clonebench.__version__ == version == newest == str(citation["version"])


def test_the_licence_file_is_the_one_pyproject_names():
    assert project()["license"] == {"text": "Apache-2.0"}
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    assert yaml.safe_load((REPO / "CITATION.cff").read_text())["license"] == "Apache-2.0"


def test_the_changelog_states_its_version_policy():
    policy = (REPO / "CHANGELOG.md").read_text().split("## Version policy", 1)[1].split("\n## ", 1)[0]
    assert "change that can change a score is a version bump" in policy
