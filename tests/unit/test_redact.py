import logging

import pytest

from clonebench.core import redact as r


@pytest.fixture(autouse=True)
def _restore_registry():
    """Secrets registered here must not redact other tests' text (the registry is process-wide)."""
    saved, pattern = set(r._secrets), r._pattern
    yield
    r._secrets.clear()
    r._secrets.update(saved)
    r._pattern = pattern


def test_url_credentials_are_removed_wherever_they_appear():
    text = "GET http://alice:p@ss:w0rd@10.0.0.1:8080/v1/health failed; see 'https://bob:x@h/' and ws://u@h"
    out = r.redact(text)
    assert "alice" not in out and "p@ss" not in out and "bob" not in out and "u@h" not in out
    assert "http://10.0.0.1:8080/v1/health" in out and "https://h/" in out


def test_registered_secrets_are_removed_but_not_from_inside_hashes():
    r.register_secret("sk-abc123-SECRET")
    r.register_secret("beef")  # short and hex: must not eat into a sha256
    digest = "00beef" + "0" * 58
    out = r.redact_value({"error": 'echo: {"Authorization": "Bearer sk-abc123-SECRET"}', "sha256": digest,
                          "list": ["key=beef;"], 3: None})
    assert "sk-abc123-SECRET" not in str(out) and "Bearer [redacted]" in out["error"]
    assert out["sha256"] == digest and out["list"] == ["key=[redacted];"] and out[3] is None


def test_url_passwords_are_registered_with_their_basic_auth_form():
    import base64

    r.register_url_credentials("http://carol:Tr0ub4dor%263@host:1/")
    basic = base64.b64encode(b"carol:Tr0ub4dor&3").decode()
    out = r.redact(f"Authorization: Basic {basic}; password Tr0ub4dor&3 or Tr0ub4dor%263")
    assert basic not in out and "Tr0ub4dor" not in out


def test_terminal_escaping_makes_control_characters_visible():
    hostile = "\x1b[2J\x1b[HALL OK\r\x08\x07\x9b31m\u202eevil\u200b\nnext"
    out = r.escape_terminal(hostile)
    assert out.isprintable() and "\\x1b[2J" in out and "\\r" in out and "\\u202e" in out and "\\n" in out
    assert r.escape_terminal("line one\n  line two\tok", keep_newlines=True) == "line one\n  line two\tok"
    assert r.escape_terminal("plain ünïcode text") == "plain ünïcode text"


def test_log_records_are_redacted_and_escaped(tmp_path):
    r.register_secret("tok-LOGSECRET-42")
    logger = logging.getLogger("clonebench.test_redact")
    handler = logging.FileHandler(tmp_path / "log.txt")
    logger.addHandler(handler)
    r.install_log_redaction(logger)
    r.install_log_redaction(logger)  # idempotent
    try:
        logger.warning("endpoint %s said %r", "http://u:pw123456@h/x", "tok-LOGSECRET-42 \x1b[31m")
        try:
            raise ValueError("boom tok-LOGSECRET-42")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
        handler.close()
    text = (tmp_path / "log.txt").read_text()
    assert "pw123456" not in text and "LOGSECRET" not in text and "\x1b" not in text
    assert "http://h/x" in text and "Traceback" in text and len(handler.filters) == 1
