"""Typed, tracked reads of the composed Hydra config.

Every key is read through :class:`ConfigReader`, which checks its type and range and remembers that
it was read. After the settings are built, any key that no code read is an error: a typo such as
``+adversary.temprature=0.5`` fails loudly instead of silently running with the default, and the
dead-key test composes every config file and asserts that nothing is left unread.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from clonebench.core.errors import ConfigError

_MISSING = object()


def leaf_keys(node: Any, prefix: str = "") -> list[str]:
    if isinstance(node, DictConfig):
        keys = []
        for key in node.keys():
            path = f"{prefix}.{key}" if prefix else str(key)
            value = node._get_node(key)
            if isinstance(value, DictConfig) and len(value) > 0:
                keys.extend(leaf_keys(value, path))
            else:
                keys.append(path)
        return keys
    return [prefix] if prefix else []


class ConfigReader:
    """Reads keys of ``cfg`` with type checks; ``source`` names the config in error messages."""

    def __init__(self, cfg: DictConfig, source: str, ignore: tuple[str, ...] = ("hydra",)):
        self.cfg = cfg
        self.source = source
        self.ignore = ignore
        self.read: set[str] = set()

    def has(self, key: str) -> bool:
        return OmegaConf.select(self.cfg, key, default=_MISSING, throw_on_missing=False) is not _MISSING

    def _raw(self, key: str, default: Any) -> Any:
        self.read.add(key)
        value = OmegaConf.select(self.cfg, key, default=_MISSING, throw_on_missing=False)
        if value is _MISSING:
            if default is _MISSING:
                raise ConfigError(f"{self.source}: required key '{key}' is not set (add {key}=... to the command line)")
            return default
        if isinstance(value, (DictConfig, ListConfig)):
            value = OmegaConf.to_container(value, resolve=True)
        return value

    def _fail(self, key: str, value: Any, wanted: str) -> ConfigError:
        return ConfigError(f"{self.source}: key '{key}' = {value!r} is not {wanted} (fix: {key}=<{wanted}>)")

    def int(self, key: str, default: Any = _MISSING, *, minimum: int | None = None,
            maximum: int | None = None, allow_none: bool = False) -> int | None:
        value = self._raw(key, default)
        if value is None and allow_none:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._fail(key, value, "an integer" + (" or null" if allow_none else ""))
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise self._fail(key, value, f"an integer in [{minimum}, {maximum}]")
        return value

    def float(self, key: str, default: Any = _MISSING, *, minimum: float | None = None,
              maximum: float | None = None, allow_none: bool = False) -> float | None:
        value = self._raw(key, default)
        if value is None and allow_none:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self._fail(key, value, "a number")
        if not math.isfinite(value):  # nan passes every range check, inf every one-sided one
            raise self._fail(key, value, "a finite number")
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise self._fail(key, value, f"a number in [{minimum}, {maximum}]")
        return float(value)

    def bool(self, key: str, default: Any = _MISSING) -> bool:
        value = self._raw(key, default)
        if not isinstance(value, bool):
            raise self._fail(key, value, "true or false")
        return value

    def str(self, key: str, default: Any = _MISSING, *, choices: tuple[str, ...] | None = None,
            allow_none: bool = False) -> str | None:
        value = self._raw(key, default)
        if value is None and allow_none:
            return None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and choices is None:
            value = str(value)  # ids such as speaker_id=121 arrive as ints from the command line
        if not isinstance(value, str) or (choices is not None and value not in choices):
            raise self._fail(key, value, f"one of {list(choices)}" if choices else "a string")
        return value

    def path(self, key: str, default: Any = _MISSING) -> Path | None:
        value = self.str(key, default, allow_none=True)
        return None if value in (None, "") else Path(value).expanduser()

    def list(self, key: str, default: Any = _MISSING, *, allow_none: bool = False) -> list | None:
        value = self._raw(key, default)
        if value is None and allow_none:
            return None
        if not isinstance(value, list):
            raise self._fail(key, value, "a list")
        return value

    def mark_read(self, *keys: str) -> None:
        self.read.update(keys)

    def unread(self) -> list[str]:
        def covered(key: str) -> bool:
            return any(key == r or key.startswith(r + ".") for r in self.read)
        return sorted(k for k in leaf_keys(self.cfg) if k.split(".")[0] not in self.ignore and not covered(k))

    def check_all_read(self) -> None:
        left = self.unread()
        if left:
            raise ConfigError(
                f"{self.source}: key(s) {left} are not used by clonebench (a typo, or a key of another adversary/"
                "dataset); remove them or fix their spelling"
            )
