"""SGLang-Omni ``/v1/audio/speech`` (``sglang_omni_speech``) end to end against the stand-in's emulation on loopback:
references staged in a shared folder (removed after the run), generate, resume, a 422 detail (permanent), a 500
(retried), the seed recorded as ignored (S2-Pro); plus request building and the pcm answer."""

from __future__ import annotations

import hashlib
import io
import json

import httpx
import numpy as np
import pytest
import soundfile as sf

from clonebench.adversary.base import SynthesisInput
from clonebench.adversary.sglang_omni_speech import SGLangOmniSpeech
from clonebench.config.settings import read_settings
from clonebench.core.errors import ConfigError
from clonebench.core.records import RunStatus
from clonebench.data.audio import InvalidAudio, validate_wav
from clonebench.standin import running_standin
from tests.conftest import compose, files_under, generate_run, journal, load_manifest

PATH = "/v1/audio/speech"


@pytest.fixture
def share(tmp_path):
    folder = tmp_path / "share"
    folder.mkdir()
    return folder


def args(share, *extra):
    return ("adversary=sglang_omni_speech", f"adversary.reference_share.local_dir={share}", *extra)


def test_generate_resume_and_cleanup(tmp_path, dataset, share):
    before = files_under(tmp_path)
    with running_standin(protocol="sglang_omni", references_dir=share, max_lifetime=300) as server:
        status, run_dir = generate_run(tmp_path, dataset, server.url, *args(share, "adversary.max_samples=3"),
                                       path=PATH)
        assert status == RunStatus.GENERATED
        manifest = load_manifest(run_dir)
        staged = manifest["reference_share"]
        assert staged["staged"] and all(e["server_path"] == f"{share}/{e['sha256']}.wav" for e in staged["staged"])
        assert list(share.iterdir()) == []  # cleaned after the run
        assert manifest["seeded"] is False and manifest["seed_handling"] == "sent, ignored by the server"
        assert manifest["seed_honoured"] is False
        received = len(server.received)
        status, resumed = generate_run(tmp_path, dataset, server.url, *args(share, "adversary.max_samples=3"),
                                       f"vc.resume_from={run_dir}", "adversary.reference_check=false",
                                       run_dir=tmp_path / "results" / "resumed", path=PATH)
        assert status == RunStatus.GENERATED
        assert load_manifest(resumed)["resumed_from"]["reused"] == 3
        assert len(server.received) == received
    written = files_under(tmp_path) - before
    assert not any(share in p.parents for p in written)


def test_a_deterministic_server_does_not_make_an_ignored_seed_honoured(tmp_path, dataset, share, monkeypatch,
                                                                       capsys):
    """A server that answers identical requests identically passes the determinism probe; the adapter knows the
    seed is never read, and that wins in every record: manifest, gate, compare-check and repeat."""
    from argparse import Namespace

    from clonebench.cli import repeat
    from clonebench.report.compatibility import differences
    from clonebench.report.tables import ResultTable
    from clonebench.standin import voice

    synthesize = voice.synthesize
    monkeypatch.setattr(voice, "synthesize", lambda text, language, style, seed: synthesize(text, language, style, 0))
    with running_standin(protocol="sglang_omni", references_dir=share, max_lifetime=300) as server:
        status, run_dir = generate_run(tmp_path, dataset, server.url, *args(share, "adversary.max_samples=3"),
                                       path=PATH)
        capsys.readouterr()
        repeat.run(Namespace(run_dir=run_dir, count=1, repeats=1, endpoint=None, output=tmp_path / "repeat.json"))
    assert status == RunStatus.GENERATED
    manifest, check = load_manifest(run_dir), load_manifest(run_dir)["reference_check"]
    assert manifest["seed_honoured"] is False and manifest["seeded"] is False  # what the adapter knows wins ...
    assert check["determinism_probe"]["identical"] is True  # ... over the determinism the probe saw
    assert check["seed_honoured"] is False and check["determinism_probe"]["seed_honoured"] is False
    assert check["status"] == "passed" and check["method"] == "byte comparison (deterministic server; the seed is not read)"
    table = ResultTable("sglang", [], status="complete", generation_status="generated",
                        seed_policy=manifest["seed_policy"], seed=manifest["seed"],
                        seed_honoured=manifest["seed_honoured"], seeded_recorded=manifest["seeded"],
                        seed_handling=manifest["seed_handling"])
    assert not table.seeded and table.unseeded_server
    said = " ".join(differences(table, table))
    assert "ignores the seed it is sent" in said and "determinism probe" not in said, said
    summary = json.loads((tmp_path / "repeat.json").read_text())
    assert summary["seeded"] is False and "ignores the seed it is sent" in capsys.readouterr().out


def test_422_is_permanent_and_500_retried(tmp_path, dataset, share):
    with running_standin(protocol="sglang_omni", references_dir=share, max_lifetime=300) as server:
        server.faults.add([{"kind": "status", "code": 422, "message": "input: Field required"}])
        status, run_dir = generate_run(tmp_path, dataset, server.url,
                                       *args(share, "adversary.max_samples=1", "adversary.reference_check=false"),
                                       path=PATH)
        assert status != RunStatus.GENERATED
        ends = [e for e in journal(run_dir) if e.get("event") == "attempt_end"]
        assert len(ends) == 1 and "SGLang-Omni: the server refused the request: input: Field required" in \
            ends[0]["error"]
        server.faults.add([{"kind": "status", "code": 500, "message": "CUDA out of memory"}])
        status, run_dir = generate_run(tmp_path / "retry", dataset, server.url,
                                       *args(share, "adversary.max_samples=1", "adversary.reference_check=false"),
                                       path=PATH)
        assert status == RunStatus.GENERATED
        ends = [e for e in journal(run_dir) if e.get("event") == "attempt_end"]
        assert len(ends) == 2 and "CUDA out of memory" in ends[0]["error"]
    assert list(share.iterdir()) == []


def test_pcm_answer_and_no_share(tmp_path, dataset, share):
    with running_standin(protocol="sglang_omni", references_dir=share, max_lifetime=300) as server:
        status, _ = generate_run(tmp_path, dataset, server.url,
                                 *args(share, "adversary.max_samples=1", "adversary.reference_check=false",
                                       "adversary.response_format=pcm"), path=PATH)
        assert status == RunStatus.GENERATED
        received = len(server.received)
        with pytest.raises(ConfigError, match="reference_share.local_dir is not set"):
            generate_run(tmp_path / "none", dataset, server.url, "adversary=sglang_omni_speech",
                         "adversary.max_samples=1", path=PATH)
        assert len(server.received) == received


def test_standin_errors(share):
    with running_standin(protocol="sglang_omni", references_dir=share, max_lifetime=60) as server:
        missing = httpx.post(f"{server.url}{PATH}", json={"input": "Hi.", "references": [
            {"audio_path": str(share / "missing.wav"), "text": "x"}]}, timeout=30)
        no_input = httpx.post(f"{server.url}{PATH}", json={"references": []}, timeout=30)
        health = httpx.get(f"{server.url}/health", timeout=30)
    assert missing.status_code == 500 and "missing.wav" in missing.json()["detail"]
    assert no_input.status_code == 422 and no_input.json()["detail"][0]["loc"] == ["body", "input"]
    assert health.status_code == 200 and health.json()["status"] == "healthy"


def _adversary(share, *extra):
    settings = read_settings(compose("demo", list(args(share, *extra))), "test")
    return SGLangOmniSpeech(settings.client, settings.adversary_params)


def _wav():
    out = io.BytesIO()
    sf.write(out, np.full(16000, 0.1, dtype=np.float32), 16000, format="WAV", subtype="PCM_16")
    return out.getvalue()


def test_request_building(share):
    adversary = _adversary(share, "adversary.temperature=0.5")
    wav = _wav()
    item = SynthesisInput("Bonjour.", "FR", wav, "Hello there.", 7)
    request = adversary.prepare(item)
    digest = hashlib.sha256(wav).hexdigest()
    assert json.loads(request.content) == {
        "input": "Bonjour.", "references": [{"audio_path": f"{share}/{digest}.wav", "text": "Hello there."}],
        "response_format": "wav", "stream": False, "temperature": 0.5, "seed": 7}
    assert (share / f"{digest}.wav").is_file() and request.to_wav is None
    assert adversary.prepare(item).content == request.content  # the same bytes every time
    assert "reference_share" not in adversary.request_fingerprint_fields()
    assert adversary.effective_sampling() == {"temperature": 0.5, "top_p": 0.8, "top_k": 30,
                                              "repetition_penalty": 1.1, "max_new_tokens": None}
    assert adversary.seeded(7) is False and adversary.seed_ignored
    assert "seed" not in json.loads(adversary.prepare(SynthesisInput("x", "EN", wav, "y", None)).content)
    adversary.release()
    assert list(share.iterdir()) == []
    qwen = _adversary(share, "adversary.pipeline=qwen3_tts", "adversary.response_format=pcm",
                      "adversary.reference_share.server_dir=/mnt/refs", "adversary.model=Qwen/Qwen3-TTS")
    body = json.loads(qwen.prepare(item).content)
    assert (body["ref_audio"], body["ref_text"], body["task_type"], body["model"]) == \
        (f"/mnt/refs/{digest}.wav", "Hello there.", "base", "Qwen/Qwen3-TTS")
    assert "references" not in body and qwen.params["sample_rate"] == 24000
    pcm = (np.sin(np.arange(2400) / 5) * 8000).astype("<i2").tobytes()
    info = validate_wav(qwen.prepare(item).to_wav(pcm))
    assert (info.sample_rate, info.frames) == (24000, 2400)
    with pytest.raises(InvalidAudio):
        qwen.to_wav(pcm[:-1])
    qwen.release()
