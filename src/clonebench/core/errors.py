"""Errors a user can act on: each names the file or config key involved and the fix."""

from __future__ import annotations


class ClonebenchError(Exception):
    """Base class for errors reported to the user without a traceback."""


class ConfigError(ClonebenchError):
    """A config key is missing, mistyped or out of range."""


class ManifestError(ClonebenchError):
    """One or more manifest rows are invalid; raised before any request is sent."""

    def __init__(self, manifest: str, problems: list[str], bad_rows: dict[int, str] | None = None):
        self.manifest = manifest
        self.problems = problems
        self.bad_rows = bad_rows or {}
        shown = problems[:25]
        more = f"\n  ... and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
        super().__init__(
            f"{len(problems)} problem(s) in manifest {manifest}:\n  " + "\n  ".join(shown) + more
        )


class ServerNotReadyError(ClonebenchError):
    """The server's readiness probe did not answer as expected."""


class ReferenceIgnoredError(ClonebenchError):
    """The reference-sensitivity gate found that the server ignores the reference audio."""


class ResumeError(ClonebenchError):
    """A run cannot be resumed from the given directory."""


class JournalError(ClonebenchError):
    """The sample journal is corrupt before its last line."""


class DependencyError(ClonebenchError):
    """A pinned package or program that a scoring rule needs is missing or another version; names the fix."""
