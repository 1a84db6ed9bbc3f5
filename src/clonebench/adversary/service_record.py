"""Reading the service record a launcher wrote (scripts/serve_fish_s2.py, scripts/serve_s2cpp.py ``--record``).

The record holds the server's exact command line. Its ``fingerprint`` part (the flags that change the audio,
the binary's sha256 or the checkout's commit, the startup seed) goes into the generation fingerprint, the
whole record into the run's provenance (``adversary.service_record=PATH``).
"""

from __future__ import annotations

import json
from pathlib import Path

from clonebench.core.errors import ConfigError

SCHEMA = "clonebench.service_record/1"
KEY = "adversary.service_record"


def load_service_record(path: Path | None, protocol: str) -> dict | None:
    """The record at ``path`` (None when the key is unset); ConfigError naming the key for anything wrong."""
    if path is None:
        return None
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{KEY}={path}: no such file; start the server with scripts/serve_fish_s2.py or "
                          f"scripts/serve_s2cpp.py --record {path}, or set {KEY}=null") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{KEY}={path}: not a readable service record ({exc}); rewrite it by restarting the "
                          "server through its launcher") from exc
    if not isinstance(record, dict) or record.get("schema") != SCHEMA or not isinstance(record.get("fingerprint"), dict):
        raise ConfigError(f"{KEY}={path}: not a service record (expected schema {SCHEMA!r} with a 'fingerprint'); "
                          "it must be the file a scripts/serve_*.py --record wrote")
    if record.get("protocol") != protocol:
        raise ConfigError(f"{KEY}={path}: records a {record.get('protocol')!r} server ({record.get('server')}), but "
                          f"adversary.protocol={protocol}; point {KEY} at this server's record")
    return record
