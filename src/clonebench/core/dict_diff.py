"""Where two nested records (configs, requests) differ: the dotted path of every leaf that differs."""

from __future__ import annotations

from typing import Any


def leaf_differences(old: dict, new: dict, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """``(dotted.key, old value, new value)`` for every leaf that differs, nested dicts compared key by key."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += leaf_differences(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append((f"{prefix}{key}", a, b))
    return out
