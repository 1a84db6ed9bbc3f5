"""The one way to open a file clonebench did not write itself (a submitted clip, a data root's audio, a manifest, a
suite file, a ratings file, a journal, a cache record, a run folder named on the command line).

Every reader goes through :func:`read_bytes` (or :func:`read_text` / :func:`read_json` on top of it), which:

- opens with ``O_NONBLOCK`` (a FIFO or a device placed where a file should be never blocks the open) and
  ``O_NOCTTY``, then checks the **opened descriptor** with ``fstat``: anything but a regular file (directory, FIFO,
  socket, device) is refused. The checks are on the descriptor, so the file cannot be swapped between check and read;
- confines symbolic links: when ``within`` is given (the folder the user gave), the descriptor's real path
  (``/proc/self/fd`` on Linux, ``realpath`` elsewhere) must lie inside that folder's real path. A symlink that stays
  inside the folder is allowed (datasets link shared clips within themselves); one that leaves it is refused.
  ``follow=False`` refuses every symlink in the last component (``O_NOFOLLOW``): for records clonebench wrote
  itself, which it never writes as links;
- bounds the size before reading (``st_size``) and while reading (a file that grows is cut at ``max_bytes + 1`` and
  refused), so no reader holds more than its bound;
- never echoes content: an :class:`UntrustedFileError` names the file, what was wrong and the fix, and never a byte
  of what it read.

JSON is parsed with bounded integers (at most ``MAX_INT_DIGITS`` digits: Python's own limit raises a ValueError deep
inside ``json``), no NaN/Infinity constants, and a bounded nesting depth, so a hostile document is a classified error,
never a traceback. Why hand-written: the standard library has no "open a regular file without blocking, confined
to a folder" call, and the check must be on the descriptor (no TOCTOU), which ``pathlib`` cannot express.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from clonebench.core.errors import ClonebenchError
from clonebench.core.redact import escape_terminal

MAX_INT_DIGITS = 30  # a JSON integer longer than this is refused (no file clonebench reads needs more)
MAX_JSON_DEPTH = 64
_CHUNK = 1 << 20


class UntrustedFileError(ClonebenchError):
    """An untrusted file was refused. ``reason`` is a short category ("not a regular file", "outside", "too large",
    "unreadable", "not UTF-8 text", "not JSON") for per-file problem lists; the message names the file and the fix."""

    def __init__(self, path: os.PathLike | str, reason: str, fix: str, what: str = "file"):
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{what} {printable(os.fspath(path))}: {reason}; {fix}")


def printable(text: str, limit: int = 300) -> str:
    """A path or name safe to print: escaped as every terminal line is (``escape_terminal``), length bounded
    (names are untrusted too)."""
    out = escape_terminal(text)
    return out if len(out) <= limit else out[: limit - 3] + "..."


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "a special file"


def _real_path_of(fd: int, path: Path) -> Path:
    proc = f"/proc/self/fd/{fd}"
    try:
        return Path(os.readlink(proc))
    except OSError:
        return Path(os.path.realpath(path))


def is_inside(path: Path, folder: Path) -> bool:
    real_folder = Path(os.path.realpath(folder))
    real = Path(os.path.realpath(path))
    return real == real_folder or real_folder in real.parents


def open_regular(path: os.PathLike | str, *, within: os.PathLike | str | None = None, follow: bool = True,
                 max_bytes: int | None = None, what: str = "file") -> tuple[int, os.stat_result]:
    """An open read-only descriptor of a regular file (the caller closes it) and its ``fstat``; UntrustedFileError
    (nothing read) for anything else. See the module docstring for the checks."""
    path = Path(path)
    if "\x00" in os.fspath(path):
        raise UntrustedFileError(path, "the name contains a NUL byte", "rename it", what)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    if within is not None and os.path.lexists(path) and not is_inside(path, Path(within)):
        # refused before the open too: opening a device outside the folder is already an effect
        raise UntrustedFileError(path, f"outside the folder {printable(os.fspath(within))} (a symbolic link or "
                                 "'..' leads out of it)", "copy the file into the folder instead of linking to it",
                                 what)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise UntrustedFileError(path, "missing", "check the path", what) from None
    except OSError as exc:
        if not follow and os.path.islink(path):
            raise UntrustedFileError(path, "a symbolic link", "replace it with the file itself", what) from None
        reason = os.strerror(exc.errno) if exc.errno else type(exc).__name__
        raise UntrustedFileError(path, f"unreadable ({reason})", "check its permissions and type", what) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UntrustedFileError(path, f"not a regular file ({_kind(info.st_mode)})",
                                     "give a regular file in its place", what)
        if within is not None:
            real_folder = Path(os.path.realpath(within))
            real = _real_path_of(fd, path)
            if real != real_folder and real_folder not in real.parents:
                raise UntrustedFileError(path, f"outside the folder {printable(os.fspath(within))} (a symbolic link "
                                         "or '..' leads out of it)",
                                         "copy the file into the folder instead of linking to it", what)
        if max_bytes is not None and info.st_size > max_bytes:
            raise UntrustedFileError(path, f"too large ({info.st_size} bytes; the limit is {max_bytes})",
                                     "give a smaller file", what)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_fd(fd: int, max_bytes: int, head: bytes = b"") -> bytes:
    """``head`` (bytes already read from ``fd``) and the rest of the open file, at most ``max_bytes + 1`` bytes in
    all: a result longer than ``max_bytes`` means the file grew past its bound (the caller refuses it). OSError
    propagates."""
    chunks, size = [head], len(head)
    while size <= max_bytes:
        chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_bytes(path: os.PathLike | str, *, max_bytes: int, within: os.PathLike | str | None = None,
               follow: bool = True, what: str = "file") -> bytes:
    """The whole file, through :func:`open_regular`; a file that grows past ``max_bytes`` while read is refused."""
    fd, _info = open_regular(path, within=within, follow=follow, max_bytes=max_bytes, what=what)
    try:
        try:
            data = read_fd(fd, max_bytes)
        except OSError as exc:
            reason = os.strerror(exc.errno) if exc.errno else type(exc).__name__
            raise UntrustedFileError(path, f"unreadable ({reason})", "check the file", what) from None
        if len(data) > max_bytes:
            raise UntrustedFileError(path, f"too large (grew past the limit of {max_bytes} bytes while read)",
                                     "give a smaller file that is not being written", what)
        return data
    finally:
        os.close(fd)


def read_text(path: os.PathLike | str, *, max_bytes: int, within: os.PathLike | str | None = None,
              follow: bool = True, what: str = "file") -> str:
    data = read_bytes(path, max_bytes=max_bytes, within=within, follow=follow, what=what)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UntrustedFileError(path, f"not UTF-8 text (invalid byte at offset {exc.start})",
                                 "save it as UTF-8", what) from None


def _bounded_int(text: str) -> int:
    digits = text.lstrip("-")
    if len(digits) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(digits)} digits (at most {MAX_INT_DIGITS} are accepted)")
    return int(text)


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"a number too large for a float ({len(text)} characters)")
    return value


def _depth(value: Any, limit: int) -> int:
    """Nesting depth, iteratively (a deep document must not recurse in the checker either)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def parse_json(text: str, source: os.PathLike | str, what: str = "file", max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` with bounded integers and depth and no NaN/Infinity; UntrustedFileError naming the line."""
    try:
        value = json.loads(text, parse_int=_bounded_int, parse_float=_finite_float, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise UntrustedFileError(source, f"not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
                                 "fix the syntax", what) from None
    except ValueError as exc:
        raise UntrustedFileError(source, f"not accepted JSON ({exc})", "fix the value", what) from None
    except RecursionError:
        raise UntrustedFileError(source, "nested too deeply", f"keep nesting under {max_depth} levels",
                                 what) from None
    if _depth(value, max_depth) > max_depth:
        raise UntrustedFileError(source, "nested too deeply", f"keep nesting under {max_depth} levels", what)
    return value


def read_json(path: os.PathLike | str, *, max_bytes: int, within: os.PathLike | str | None = None,
              follow: bool = True, what: str = "file", max_depth: int = MAX_JSON_DEPTH) -> Any:
    return parse_json(read_text(path, max_bytes=max_bytes, within=within, follow=follow, what=what), path, what,
                      max_depth)
