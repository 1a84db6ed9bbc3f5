"""The service record the launchers (serve_fish_s2.py, serve_s2cpp.py) write: the server's exact command line.

Standard library only: serve_fish_s2.py runs under the fish-speech environment's Python, which has no
clonebench. A run reads the record through ``adversary.service_record=PATH`` and puts it in its provenance
and its generation fingerprint (clonebench.adversary.service_record).

``command`` is the full command line with secrets replaced; ``output_args`` is the part that decides the
audio: the command without the listen address and the API key, so that restarting a server on another port
does not block a resume, while changing a flag such as ``--normalize`` does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

SCHEMA = "clonebench.service_record/1"


def redact(argv: list[str], secret_options: set[str]) -> list[str]:
    """``argv`` with the value of every option in ``secret_options`` (``--opt v`` or ``--opt=v``) replaced."""
    out, hide_next = [], False
    for arg in argv:
        if hide_next:
            out.append("<redacted>")
            hide_next = False
        elif arg.split("=", 1)[0] in secret_options and "=" in arg:
            out.append(arg.split("=", 1)[0] + "=<redacted>")
        else:
            out.append(arg)
            hide_next = arg in secret_options
    return out


def drop_options(argv: list[str], options: set[str]) -> list[str]:
    """``argv`` without the options in ``options`` and their values."""
    out, skip_next = [], False
    for arg in argv:
        if skip_next:
            skip_next = False
        elif arg.split("=", 1)[0] in options:
            skip_next = "=" not in arg
        else:
            out.append(arg)
    return out


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def git_commit(folder: Path) -> str | None:
    try:
        result = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None if result.returncode == 0 else None


def write_record(path: Path, record: dict) -> None:
    """Write ``record`` atomically (temp file, fsync, rename)."""
    path = Path(path).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"schema": SCHEMA, "written_at": time.time(), "host": socket.gethostname(), "pid": os.getpid(), **record}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, indent=2, sort_keys=True)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


if __name__ == "__main__":  # a module of the launchers, not a command: run, it only says so
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                            epilog="Imported by serve_fish_s2.py and serve_s2cpp.py; it has nothing to run.").parse_args()
    print("scripts/service_record.py is imported by the launchers; see --help")
