"""The stand-in follows the Fish api_server contract (routes, envelopes, content types) over real HTTP."""

from __future__ import annotations

import base64
import json

import httpx
import ormsgpack
import pytest

from clonebench.data.audio import validate_wav
from clonebench.standin import running_standin


@pytest.fixture
def reference(demo_dataset):
    meta = json.loads((demo_dataset / "metadata.json").read_text())["pairs"]
    return [((demo_dataset / r["prompt_file_name"]).read_bytes(), r["prompt_text"]) for r in meta]


def tts(server, body, content_type="application/msgpack", **kw):
    content = ormsgpack.packb(body) if content_type == "application/msgpack" else json.dumps(body).encode()
    return httpx.post(f"{server.url}/v1/tts", content=content, headers={"Content-Type": content_type}, timeout=60, **kw)


def test_health_is_static_and_routes_answer_like_fish(standin):
    assert httpx.get(f"{standin.url}/v1/health").json() == {"status": "ok"}
    assert httpx.post(f"{standin.url}/v1/health").json() == {"status": "ok"}
    missing = httpx.get(f"{standin.url}/nope")
    assert missing.status_code == 404 and missing.json() == {"statusCode": 404, "message": None, "error": "Not Found"}
    wrong = httpx.get(f"{standin.url}/v1/tts")
    assert wrong.status_code == 405 and wrong.headers["allow"] == "POST" and wrong.json()["message"] is None


def test_success_is_a_chunked_44k_pcm16_mono_wav(standin, reference):
    audio, text = reference[0]
    r = tts(standin, {"text": "Hello there.", "references": [{"audio": audio, "text": text}], "seed": 1})
    assert r.status_code == 200 and r.headers["content-type"] == "audio/wav"
    assert r.headers["content-disposition"] == "attachment; filename=audio.wav"
    assert "content-length" not in r.headers and r.headers["transfer-encoding"] == "chunked"
    info = validate_wav(r.content)
    assert (info.sample_rate, info.channels, info.subtype) == (44100, 1, "PCM_16")


def test_same_seed_same_bytes_and_reference_changes_voice(standin, reference):
    (a, ta), (b, tb) = reference[0], reference[2]
    one = tts(standin, {"text": "Same words.", "references": [{"audio": a, "text": ta}], "seed": 5}).content
    two = tts(standin, {"text": "Same words.", "references": [{"audio": a, "text": ta}], "seed": 5}).content
    other = tts(standin, {"text": "Same words.", "references": [{"audio": b, "text": tb}], "seed": 5}).content
    assert one == two and one != other


def test_json_body_with_base64_audio(standin, reference):
    audio, text = reference[0]
    body = {"text": "Hi.", "references": [{"audio": base64.b64encode(audio).decode(), "text": text}]}
    assert tts(standin, body, "application/json; charset=utf-8").status_code == 200
    data_uri = {"text": "Hi.", "references": [{"audio": "data:audio/wav;base64," + base64.b64encode(audio).decode(),
                                               "text": text}]}
    r = tts(standin, data_uri, "application/json")  # the data: prefix breaks decoding, as in Fish: bad audio
    assert r.status_code == 500 and r.json()["message"] == "Failed to generate speech"


@pytest.mark.parametrize("headers, content, status, check", [
    ({}, b"{}", 415, lambda r: "application/msgpack" in r.headers["accept"]),
    ({"Content-Type": "text/plain"}, b"x", 415, lambda r: r.json()["error"] == "Unsupported Media Type"),
    ({"Content-Type": "application/json"}, b"{not json", 400, lambda r: r.json()["statusCode"] == 400),
    ({"Content-Type": "application/msgpack"}, b"\xc1\xc1", 500, lambda r: r.json()["statusCode"] == 500),
])
def test_body_errors(standin, headers, content, status, check):
    r = httpx.post(f"{standin.url}/v1/tts", content=content, headers=headers)
    assert r.status_code == status and check(r)


@pytest.mark.parametrize("body, loc", [
    ({}, ["body", "text"]),
    ({"text": "x", "top_p": "0.5"}, ["body", "top_p"]),          # strict float: a string is refused
    ({"text": "x", "temperature": 1.5}, ["body", "temperature"]),
    ({"text": "x", "format": "flac"}, ["body", "format"]),
    ({"text": "x", "references": [{"audio": b"x"}]}, ["body", "references", 0]),
])
def test_validation_errors_are_pydantic_lists(standin, body, loc):
    r = tts(standin, body)
    assert r.status_code == 422 and isinstance(r.json(), list) and r.json()[0]["loc"] == loc


def test_lax_ints_and_format_quirks(standin, reference):
    audio, text = reference[0]
    ref = [{"audio": audio, "text": text}]
    assert tts(standin, {"text": "x", "references": ref, "seed": "42", "chunk_length": 5}).status_code == 200
    assert tts(standin, {"text": "x", "format": "pcm"}).status_code == 500
    assert tts(standin, {"text": "x", "streaming": True, "format": "mp3"}).status_code == 400
    stream = tts(standin, {"text": "Streaming.", "references": ref, "streaming": True})
    assert stream.status_code == 200 and not stream.content.startswith(b"RIFF")  # headerless s16le, as Fish


def test_unknown_reference_id_gives_an_unconditioned_voice(tmp_path, reference):
    with running_standin(references_dir=tmp_path / "refs", max_lifetime=120) as server:
        unconditioned = tts(server, {"text": "Words.", "seed": 3}).content
        empty_folder = tts(server, {"text": "Words.", "seed": 3, "reference_id": "nobody"}).content
        assert empty_folder == unconditioned and (tmp_path / "refs" / "nobody").is_dir()
        assert tts(server, {"text": "Words.", "reference_id": "../etc"}).status_code == 500


def test_bearer_key_and_received_hashes(reference):
    with running_standin(api_key="k3y", max_lifetime=120) as server:
        assert httpx.get(f"{server.url}/v1/health").status_code == 401
        ok = httpx.get(f"{server.url}/v1/health", headers={"Authorization": "Bearer k3y"})
        assert ok.json() == {"status": "ok"}
        assert httpx.get(f"{server.url}/v1/health", headers={"Authorization": "bearer k3y"}).status_code == 401
        r = httpx.post(f"{server.url}/v1/tts", content=b"\xc1abc", headers={"Authorization": "Bearer k3y",
                                                                            "Content-Type": "application/msgpack"})
        received = httpx.get(f"{server.url}/_standin/received").json()
        import hashlib
        assert r.status_code == 500 and received[-1]["sha256"] == hashlib.sha256(b"\xc1abc").hexdigest()


def test_loopback_only():
    from clonebench.standin.server import StandinServer

    with pytest.raises(ValueError, match="loopback only"):
        StandinServer(("0.0.0.0", 0))


def test_cli_server_stops_by_itself(tmp_path):
    import subprocess
    import sys
    import time

    port_file = tmp_path / "url"
    process = subprocess.Popen([sys.executable, "-m", "clonebench.standin", "--port-file", str(port_file),
                                "--max-lifetime", "3"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while not port_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    url = port_file.read_text().strip()
    assert httpx.get(f"{url}/v1/health").json() == {"status": "ok"}
    assert process.wait(timeout=30) == 0
    assert b"not a cloning model" in process.stdout.read()
