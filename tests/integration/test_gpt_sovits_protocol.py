"""GPT-SoVITS api_v2 (``gpt_sovits_http``) end to end against the stand-in's emulation on loopback: references staged
in a shared folder (content-addressed, removed after the run unless kept, nothing written outside it), generate,
resume, the gate, a 400 and a streamed answer cut short; plus request building and the answer normalisation."""

from __future__ import annotations

import hashlib
import io
import json

import httpx
import numpy as np
import pytest
import soundfile as sf

from clonebench.adversary.base import SynthesisInput
from clonebench.adversary.gpt_sovits_http import (
    GPTSoVITSHTTP,
    fix_streamed_header,
    not_all_zero,
)
from clonebench.config.settings import read_settings
from clonebench.core.errors import ConfigError
from clonebench.core.records import RunStatus
from clonebench.data.audio import InvalidAudio, validate_wav
from clonebench.standin import gpt_sovits_api, running_standin
from clonebench.standin.gpt_sovits_api import header_without_frames
from tests.conftest import compose, files_under, generate_run, journal, load_manifest

# the eSpeak demo references are 2.3-2.8 s, under GPT-SoVITS's 3 s minimum: the check is off and the stand-in's
# minimum lowered (test_duration_rule shows the check refusing them)
GSV = ("adversary=gpt_sovits_http", "adversary.reference_duration_check=false")


@pytest.fixture(autouse=True)
def _short_demo_references(monkeypatch):
    monkeypatch.setattr(gpt_sovits_api, "REF_MIN_S", 2.0)


def test_duration_rule(tmp_path, dataset, share):
    with running_standin(protocol="gpt_sovits", references_dir=share, max_lifetime=60) as server:
        with pytest.raises(ConfigError, match="shorter than 3 s"):
            generate_run(tmp_path, dataset, server.url, "adversary=gpt_sovits_http", *share_args(share), path="/tts")
        assert server.received == []


def share_args(share, keep=False):
    return (f"adversary.reference_share.local_dir={share}", f"adversary.reference_share.keep={str(keep).lower()}")


@pytest.fixture
def share(tmp_path):
    folder = tmp_path / "share"
    folder.mkdir()
    return folder


def test_generate_resume_and_cleanup(tmp_path, dataset, share):
    before = files_under(tmp_path)
    with running_standin(protocol="gpt_sovits", references_dir=share, max_lifetime=300) as server:
        status, run_dir = generate_run(tmp_path, dataset, server.url, *GSV, *share_args(share),
                                       "adversary.max_samples=4", path="/tts")
        assert status == RunStatus.GENERATED
        manifest = load_manifest(run_dir)
        staged = manifest["reference_share"]
        assert staged["local_dir"] == str(share) and staged["staged"]
        for entry in staged["staged"]:
            assert entry["server_path"] == f"{share}/{entry['sha256']}.wav"
        assert list(share.iterdir()) == []  # cleaned after the run
        assert manifest["reference_check"]["status"] == "passed"
        # resume: nothing is requested again
        received = len(server.received)
        status, resumed = generate_run(tmp_path, dataset, server.url, *GSV, *share_args(share),
                                       "adversary.max_samples=4", f"vc.resume_from={run_dir}",
                                       "adversary.reference_check=false", run_dir=tmp_path / "results" / "resumed",
                                       path="/tts")
        assert status == RunStatus.GENERATED
        assert load_manifest(resumed)["resumed_from"]["reused"] == 4
        assert len(server.received) == received  # nothing left to request: not even a readiness probe
    written = files_under(tmp_path) - before
    assert all(share in p.parents or (tmp_path / "results") in p.parents for p in written)
    assert not any(share in p.parents for p in written)  # the share holds nothing after the run


def test_keep_leaves_content_addressed_files(tmp_path, dataset, share):
    with running_standin(protocol="gpt_sovits", references_dir=share, max_lifetime=300) as server:
        status, run_dir = generate_run(tmp_path, dataset, server.url, *GSV, *share_args(share, keep=True),
                                       "adversary.max_samples=2", "adversary.reference_check=false", path="/tts")
    assert status == RunStatus.GENERATED
    kept = sorted(share.iterdir())
    assert kept and all(p.name == hashlib.sha256(p.read_bytes()).hexdigest() + ".wav" for p in kept)
    assert {e["sha256"] for e in load_manifest(run_dir)["reference_share"]["staged"]} == {p.stem for p in kept}


def test_no_share_is_refused_before_any_request(tmp_path, dataset):
    with running_standin(protocol="gpt_sovits", max_lifetime=120) as server:
        with pytest.raises(ConfigError, match="reference_share.local_dir is not set.*shared mount"):
            generate_run(tmp_path, dataset, server.url, *GSV, "adversary.max_samples=1", path="/tts")
        assert server.received == []


def test_400_and_cut_stream_are_failed_attempts(tmp_path, dataset, share):
    with running_standin(protocol="gpt_sovits", references_dir=share, max_lifetime=300) as server:
        server.faults.add([{"kind": "status", "code": 400, "message": "tts failed", "exception": "CUDA out of memory"}])
        status, run_dir = generate_run(tmp_path, dataset, server.url, *GSV, *share_args(share),
                                       "adversary.max_samples=1", "adversary.reference_check=false", path="/tts")
        assert status != RunStatus.GENERATED
        ends = [e for e in journal(run_dir) if e.get("event") == "attempt_end"]
        assert ends and "GPT-SoVITS: tts failed (CUDA out of memory)" in ends[-1]["error"]
        assert len(ends) == 1  # a 400 is permanent
        server.faults.add([{"kind": "truncate"}] * 3)
        status, run_dir = generate_run(tmp_path / "cut", dataset, server.url, *GSV, *share_args(share),
                                       "adversary.max_samples=1", "adversary.reference_check=false",
                                       "adversary.streaming_mode=2", "adversary.request_attempts=2", path="/tts")
        assert status != RunStatus.GENERATED
        ends = [e for e in journal(run_dir) if e.get("event") == "attempt_end"]
        assert ends and all(e["outcome"] == "unknown_outcome" for e in ends)
        status, run_dir = generate_run(tmp_path / "stream", dataset, server.url, *GSV, *share_args(share),
                                       "adversary.max_samples=1", "adversary.reference_check=false",
                                       "adversary.streaming_mode=2", path="/tts")
        assert status == RunStatus.GENERATED  # a whole streamed answer (header data size 0) is accepted
    assert list(share.iterdir()) == []


def test_standin_refuses_a_path_that_does_not_exist(share):
    body = {"text": "Hello.", "text_lang": "en", "prompt_lang": "en", "prompt_text": "Hi.",
            "ref_audio_path": str(share / "missing.wav")}
    with running_standin(protocol="gpt_sovits", references_dir=share, max_lifetime=60) as server:
        answer = httpx.post(f"{server.url}/tts", json=body, timeout=30)
        empty = httpx.post(f"{server.url}/tts", json={}, timeout=30)
        upper = httpx.post(f"{server.url}/tts", json={**body, "text_lang": "xx"}, timeout=30)
    assert answer.status_code == 400 and answer.json() == {"message": "tts failed",
                                                           "Exception": f"{share / 'missing.wav'} not exists"}
    assert empty.status_code == 400 and empty.json() == {"message": "ref_audio_path is required"}
    assert upper.status_code == 400 and "not supported" in upper.json()["message"]


def _adversary(share, *extra):
    cfg = compose("demo", ["adversary=gpt_sovits_http",
                           *share_args(share), *extra])
    settings = read_settings(cfg, "test")
    return GPTSoVITSHTTP(settings.client, settings.adversary_params)


def test_request_building(tmp_path, share):
    adversary = _adversary(share, "adversary.streaming_mode=3")
    wav = io.BytesIO()
    sf.write(wav, np.full(16000, 0.1, dtype=np.float32), 16000, format="WAV", subtype="PCM_16")
    item = SynthesisInput("Bonjour.", "EN", wav.getvalue(), "Hello there.", 7, prompt_language="ZH")
    request = adversary.prepare(item)
    body = json.loads(request.content)
    digest = hashlib.sha256(wav.getvalue()).hexdigest()
    assert body["ref_audio_path"] == f"{share}/{digest}.wav" and (share / f"{digest}.wav").is_file()
    assert (body["text_lang"], body["prompt_lang"], body["seed"], body["streaming_mode"]) == ("en", "zh", 7, 3)
    assert adversary.prepare(item).content == request.content  # the same bytes every time
    assert "reference_share" not in adversary.request_fingerprint_fields()
    record = adversary.release()["reference_share"]
    assert record["staged"] == [{"sha256": digest, "server_path": f"{share}/{digest}.wav", "created": True}]
    assert list(share.iterdir()) == []
    with pytest.raises(ConfigError, match="not a GPT-SoVITS v2 code"):
        adversary.prepare(SynthesisInput("x", "DE", wav.getvalue(), "y", None))
    unseeded = json.loads(adversary.prepare(SynthesisInput("x", "EN", wav.getvalue(), "y", None)).content)
    assert unseeded["seed"] == -1
    adversary.release()
    with pytest.raises(ConfigError, match="not a GPT-SoVITS v1 language"):
        _adversary(share, "adversary.languages=v1", "adversary.text_lang=ko")
    remote = _adversary(share, "adversary.reference_share.server_dir=/mnt/refs/")
    assert json.loads(remote.prepare(item).content)["ref_audio_path"] == f"/mnt/refs/{digest}.wav"
    remote.release()


def test_streamed_header_and_silence():
    pcm = (np.sin(np.arange(3200) / 5) * 8000).astype("<i2").tobytes()
    streamed = header_without_frames() + pcm
    with pytest.raises(InvalidAudio):
        validate_wav(streamed)  # data size 0: nothing to read without the fix
    info = validate_wav(fix_streamed_header(streamed))
    assert (info.sample_rate, info.frames) == (32000, 3200)
    with pytest.raises(InvalidAudio, match="ends mid-sample"):
        fix_streamed_header(streamed[:-1])
    silent = io.BytesIO()
    sf.write(silent, np.zeros(16000, dtype=np.int16), 16000, format="WAV", subtype="PCM_16")
    with pytest.raises(InvalidAudio, match="all zeros"):
        not_all_zero(silent.getvalue())
