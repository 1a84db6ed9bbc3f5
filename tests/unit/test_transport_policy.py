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
