"""The one redaction point: what leaves the process carries no secret, and untrusted text shown on a
terminal cannot drive it.

- ``redact(text)`` removes the ``user:password@`` of every URL in ``text`` and every registered secret (the
  API key's value, URL passwords, their Basic-auth form), wherever they appear: journal events, manifests,
  recorded response bodies, log lines, messages and ``clonebench status`` output all pass through it.
  Secrets are registered at start-up (``register_client_secrets``, from ``adversary.api_key_env`` and the
  endpoint URLs). A registered secret is replaced where it is not glued to other letters or digits (so that
  a short password never eats into a sha256); one shorter than 4 characters is removed only inside URLs.
- ``escape_terminal(text)`` shows control characters (ANSI ESC, ``\\r``, backspace, bell, C1 controls,
  bidirectional overrides and other invisible format characters) as visible escapes such as ``\\x1b``.
- ``install_log_redaction()`` puts both on every handler of the root logger (the console and ``run_vc.log``);
  ``TerminalWriter`` on a stream (the ``clonebench`` commands' stdout).
"""

from __future__ import annotations

import base64
import logging
import os
import re
import threading
import unicodedata
from typing import Any
from urllib.parse import unquote, urlsplit

REPLACEMENT = "[redacted]"
MIN_SECRET_LENGTH = 4
# userinfo: from "://" to the last "@" before the host (a password may itself hold "@")
_URL_USERINFO = re.compile(r"(?<=://)[^/?#\s'\"<>`]*@")
_secrets: set[str] = set()
_pattern: re.Pattern | None = None
_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Redact ``value`` from now on (no-op for empty or very short values, which URL redaction covers)."""
    global _pattern
    if not value or len(value) < MIN_SECRET_LENGTH:
        return
    with _lock:
        if value in _secrets:
            return
        _secrets.add(value)
        ordered = sorted(_secrets, key=len, reverse=True)
        _pattern = re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(re.escape(s) for s in ordered) + r")(?![A-Za-z0-9])")


def register_url_credentials(url: str) -> None:
    """Register the password of ``url`` (raw and percent-decoded) and its ``Authorization: Basic`` form."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return
    if parts.password:
        for password in {parts.password, unquote(parts.password)}:
            register_secret(password)
        basic = f"{unquote(parts.username or '')}:{unquote(parts.password)}"
        register_secret(base64.b64encode(basic.encode("utf-8")).decode("ascii"))


def register_client_secrets(endpoint_urls, api_key_env: str | None) -> None:
    """The secrets of a run's client settings: the key named by ``api_key_env`` and URL passwords."""
    for url in endpoint_urls:
        register_url_credentials(url)
    if api_key_env:
        register_secret(os.environ.get(api_key_env))


def has_url_credentials(url: str) -> bool:
    return bool(_URL_USERINFO.search(url))


def redact(text: str) -> str:
    """``text`` without URL credentials and registered secrets."""
    if "@" in text:
        text = _URL_USERINFO.sub("", text)
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(REPLACEMENT, text)
    return text


def redact_value(value: Any) -> Any:
    """A JSON-like value with every string redacted, keys included (other objects become redacted strings)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k) if isinstance(k, str) else k: redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return redact(str(value))  # paths, enums...: as JSON writers show them (default=str), redacted


_NAMED = {"\r": "\\r", "\n": "\\n", "\t": "\\t", "\b": "\\b", "\a": "\\a", "\f": "\\f", "\v": "\\v", "\x1b": "\\x1b"}


def _visible(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _unsafe(char: str) -> bool:
    code = ord(char)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return True
    return code > 0x9F and unicodedata.category(char) in ("Cf", "Zl", "Zp", "Cs", "Co", "Cn")


def escape_terminal(text: str, keep_newlines: bool = False) -> str:
    """``text`` safe to print: control and invisible format characters become visible escapes.

    ``keep_newlines`` keeps ``\\n`` and ``\\t`` (multi-line messages); single-line fields escape them too, so
    that a server's text cannot start a line of its own.
    """
    text = str(text)
    if text.isprintable() and (keep_newlines or "\n" not in text):
        return text
    keep = "\n\t" if keep_newlines else ""
    return "".join(_visible(c) if c not in keep and _unsafe(c) else c for c in text)


def shown(text: Any, keep_newlines: bool = False) -> str:
    """Untrusted text as it may be shown on a terminal: redacted, then escaped."""
    return escape_terminal(redact(str(text)), keep_newlines)


class TerminalWriter:
    """A text stream that redacts and escapes what is written to it (``clonebench`` commands' stdout)."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(shown(text, keep_newlines=True))
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


class RedactingFilter(logging.Filter):
    """Redacts and escapes each record's message (and traceback) before any handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed format string: keep what there is
            message = f"{record.msg} {record.args}"
        record.msg, record.args = shown(message, keep_newlines=True), ()
        if record.exc_info:
            record.exc_text = shown(logging.Formatter().formatException(record.exc_info), keep_newlines=True)
            record.exc_info = None
        return True


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Put a RedactingFilter on every handler of ``logger`` (default: the root logger); idempotent."""
    logger = logger or logging.getLogger()
    for handler in logger.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
