import time
from email.utils import formatdate

from clonebench.adversary.fish_s2_http import health_url
from clonebench.adversary.transport import parse_retry_after


def test_retry_after_seconds_and_date():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None
    future = parse_retry_after(formatdate(time.time() + 30, usegmt=True))
    assert 25 <= future <= 31


def test_health_url_is_next_to_tts():
    assert health_url("http://127.0.0.1:18011/v1/tts") == "http://127.0.0.1:18011/v1/health"
    assert health_url("https://h/prefix/v1/tts") == "https://h/prefix/v1/health"


def test_a_malformed_retry_after_is_ignored():
    for value in ("soon", "", "  ", "nan", "inf", "-inf", "1e400", "3, 4", "Wed, 99 Foo 2024 25:61:00 GMT",
                  "Mon, 01 Jan 99999 00:00:00 GMT", "\u00e9t\u00e9", "0x10"):
        assert parse_retry_after(value) is None, value
    assert parse_retry_after("-5") == 0.0 and parse_retry_after(" 2.5 ") == 2.5
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00") == 0.0  # a date in the past, without a zone: GMT


def test_bounded_inflater_stops_at_the_limit():
    import zlib

    import httpx
    import pytest

    from clonebench.adversary.bounded import ResponseTooLarge, _Inflater

    bomb = zlib.compress(bytes(50_000_000), 9)  # 50 MB of zeros in ~50 KB
    inflater = _Inflater("deflate", 1_000_000, httpx.Request("GET", "http://h/"))
    with pytest.raises(ResponseTooLarge, match="adversary.max_response_bytes=1000000"):
        for start in range(0, len(bomb), 65536):
            inflater.feed(bomb[start:start + 65536])
    assert inflater.produced <= 1_000_001
    raw = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    data = raw.compress(b"RIFF" * 10) + raw.flush()
    assert _Inflater("deflate", 1000, httpx.Request("GET", "http://h/")).feed(data) == b"RIFF" * 10
