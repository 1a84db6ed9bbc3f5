"""The launchers' refusals and service records (scripts/serve_fish_s2.py, scripts/serve_s2cpp.py,
scripts/serve_vllm_omni.py), the streamed-body header guard, and compare-check's view of sampling and seeds."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
import serve_fish_s2  # noqa: E402


@pytest.mark.parametrize("spelling", [["--workers", "2"], ["--workers=2"], ["--worker", "2"], ["--work", "3"],
                                      ["--w", "2"], ["--wo=4"], ["--half", "--worke=2"]])
def test_every_argparse_spelling_of_workers_is_refused(spelling):
    with pytest.raises(SystemExit, match="refused"):
        serve_fish_s2.refuse_workers(["--listen", "127.0.0.1:0", *spelling])


@pytest.mark.parametrize("spelling", [["--workers", "1"], ["--w=1"], ["--listen", "127.0.0.1:0", "--half"]])
def test_one_worker_passes(spelling):
    serve_fish_s2.refuse_workers(spelling)


def test_the_option_list_comes_from_the_checkouts_argparse(tmp_path):
    """With another option starting like --workers, argparse finds '--work' ambiguous and '--worke' unambiguous:
    the refusal follows the server's own option list, not a hand list of spellings."""
    (tmp_path / "tools" / "server").mkdir(parents=True)
    (tmp_path / "tools" / "server" / "api_utils.py").write_text(
        "from argparse import ArgumentParser\n"
        "def parse_args():\n"
        "    parser = ArgumentParser()\n"
        "    parser.add_argument('--workers', type=int, default=1)\n"
        "    parser.add_argument('--work-dir', type=str)\n"
        "    parser.add_argument('--half', action='store_true')\n"
        "    return parser.parse_args()\n")
    options = serve_fish_s2.server_options(tmp_path)
    assert (("--work-dir",), True) in options and (("--half",), False) in options
    with pytest.raises(SystemExit, match="refused"):
        serve_fish_s2.refuse_workers(["--worke", "2"], tmp_path)
    with pytest.raises(SystemExit, match="would refuse"):
        serve_fish_s2.refuse_workers(["--work", "2"], tmp_path)  # ambiguous for the server too
    serve_fish_s2.refuse_workers(["--work-dir", "/x"], tmp_path)


def test_fish_record_redacts_the_key_and_fingerprints_what_changes_audio(tmp_path):
    checkout = tmp_path / "fish"
    (checkout / "tools").mkdir(parents=True)
    (checkout / "tools" / "__init__.py").write_text("")
    (checkout / "tools" / "api_server.py").write_text("import sys; print('SERVER', sys.argv[1:])\n")
    record = tmp_path / "fish_service.json"
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "serve_fish_s2.py"), "--checkout", str(checkout),
                             "--seed", "7", "--record", str(record), "--", "--listen", "127.0.0.1:9", "--api", "s3cret",
                             "--half", "--llama-checkpoint-path", "/m"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    data = json.loads(record.read_text())
    assert "s3cret" not in record.read_text() and "s3cret" not in result.stdout.split("SERVER")[0]
    assert data["schema"] == "clonebench.service_record/1" and data["protocol"] == "fish_s2_http"
    assert data["server_args"] == ["--listen", "127.0.0.1:9", "--api", "<redacted>", "--half",
                                   "--llama-checkpoint-path", "/m"]
    assert data["fingerprint"] == {"checkout_commit": None, "startup_seed": 7, "output_args": ["--half"]}


@pytest.fixture
def fake_s2(tmp_path):
    binary = tmp_path / "s2"
    binary.write_text(f"#!{sys.executable}\nimport sys, json\nprint('ARGV', json.dumps(sys.argv[1:]))\n")
    binary.chmod(0o755)
    return binary


def test_serve_s2cpp_records_the_command_and_output_flags_then_becomes_the_server(tmp_path, fake_s2):
    record = tmp_path / "s2cpp_service.json"
    args = ["-m", "/models/s2.gguf", "-P", "3030", "--normalize", "--no-trim-silence", "--trim-silence",
            "--min-tokens-before-end", "12", "--max-tokens", "2048"]
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "serve_s2cpp.py"), "--binary", str(fake_s2),
                             "--record", str(record), "--", *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    argv = json.loads(result.stdout.split("ARGV", 1)[1])
    assert argv == ["--server", *args]  # exec'd with --server added
    assert "above s2.cpp's recommended 1024" in result.stderr
    data = json.loads(record.read_text())
    assert data["command"] == [str(fake_s2.resolve()), "--server", *args]
    flags = data["output_flags"]
    assert flags["normalize"] is True and flags["trim_silence"] is True and flags["dynamic_normalize"] is False
    assert flags["min_tokens_before_end"] == "12" and flags["max_new_tokens"] == "2048"
    assert "-P" not in data["output_args"] and "3030" not in data["output_args"]
    assert data["fingerprint"]["binary_sha256"] == data["binary_sha256"] and "model" not in data["fingerprint"]


def test_serve_s2cpp_refuses_a_missing_binary(tmp_path):
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "serve_s2cpp.py"), "--binary",
                             str(tmp_path / "nope"), "--record", str(tmp_path / "r.json")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "not an executable file" in result.stderr


def _pcm(n=4410):
    return (np.sin(np.arange(n) / 10.0) * 8000).astype("<i2")


def _wav(samples, rate, subtype="PCM_16"):
    out = io.BytesIO()
    sf.write(out, samples, rate, subtype=subtype, format="WAV")
    return out.getvalue()


def test_a_streamed_body_with_a_wav_header_is_not_read_as_samples():
    from clonebench.adversary.fish_s2_http import pcm16_to_wav
    from clonebench.data.audio import InvalidAudio

    samples = _pcm()
    headerless = pcm16_to_wav(samples.tobytes())
    with_header = pcm16_to_wav(_wav(samples, 44_100))
    assert sf.read(io.BytesIO(with_header), dtype="int16")[0].tolist() == samples.tolist()
    assert with_header == headerless
    with pytest.raises(InvalidAudio, match="24000 Hz"):
        pcm16_to_wav(_wav(samples, 24_000))
    with pytest.raises(InvalidAudio, match="format 3"):
        pcm16_to_wav(_wav(samples.astype(np.float32) / 32768, 44_100, "FLOAT"))


def _table(**kw):
    from clonebench.report.tables import ResultTable

    base = dict(label="x", rows=[], status="complete", generation_status="generated", seed_policy="per_sample_seed",
                seed=42, seed_honoured=True, input_fingerprint="f" * 64,
                effective_sampling={"temperature": 0.8, "top_p": 0.8, "top_k": 30, "repetition_penalty": 1.0})
    return ResultTable(**{**base, **kw})


def test_compare_check_refuses_different_effective_sampling_and_unhonoured_seeds():
    from clonebench.report.compatibility import differences
    from clonebench.report.paper import run_rows

    assert differences(_table(), _table()) == []
    vllm_defaults = {"temperature": 0.8, "top_p": 0.9, "top_k": 30, "repetition_penalty": 1.0}
    found = differences(_table(), _table(effective_sampling=vllm_defaults))
    assert found == ["effective sampling differs: top_p 0.8 vs 0.9"]
    ignored = _table(seed_honoured=False, label="vllm")
    assert any("did not honour the seed" in line for line in differences(_table(), ignored))
    assert run_rows([ignored])[0]["name"] == "vllm (no seed)"


@pytest.fixture
def fake_vllm(tmp_path):
    binary = tmp_path / "vllm"
    binary.write_text(f"#!{sys.executable}\nimport sys, json\nprint('ARGV', json.dumps(sys.argv[1:]))\n")
    binary.chmod(0o755)
    return binary


def _serve_vllm(tmp_path, *own_and_server):
    return subprocess.run([sys.executable, str(REPO / "scripts" / "serve_vllm_omni.py"), *map(str, own_and_server)],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)


def test_serve_vllm_omni_records_the_build_and_what_decides_the_audio(tmp_path, fake_vllm):
    deploy = tmp_path / "fish_qwen3_omni.yaml"
    deploy.write_text("stage_args:\n- sampling: {temperature: 0.8, top_k: 30, top_p: 0.9}\n")
    record = tmp_path / "vllm_service.json"
    server = ["serve", "fishaudio/s2-pro", "--omni", "--deploy-config", str(deploy), "--port", "8000",
              "--api-key", "sk-vllm-s3cret"]
    result = _serve_vllm(tmp_path, "--record", record, "--build", "after-5406", "--", fake_vllm, *server)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.split("ARGV", 1)[1]) == server  # exec'd unchanged
    data = json.loads(record.read_text())
    assert "sk-vllm-s3cret" not in record.read_text() and "sk-vllm-s3cret" not in result.stdout.split("ARGV")[0]
    assert data["protocol"] == "openai_speech" and data["server"] == "vllm-omni"
    assert data["build"]["extra_params_sampling"] is True and data["build"]["label"] == "after #5406"
    assert data["fingerprint"]["deploy_config_sha256"] == data["deploy_config"]["sha256"] is not None
    assert "--port" not in data["fingerprint"]["output_args"] and "--api-key" not in data["fingerprint"]["output_args"]


def test_serve_vllm_omni_says_unknown_when_the_build_cannot_be_known(tmp_path, fake_vllm):
    checkout = tmp_path / "vllm-omni"
    checkout.mkdir()
    for command in (["init", "-q"], ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty",
                                     "-m", "a fork without the sampling commit"]):
        subprocess.run(["git", "-C", str(checkout), *command], check=True, capture_output=True)
    record = tmp_path / "r.json"
    result = _serve_vllm(tmp_path, "--record", record, "--checkout", checkout, "--", fake_vllm, "serve", "m",
                         "--stage-configs-path", "old.yaml")
    assert result.returncode == 0, result.stderr
    data = json.loads(record.read_text())
    assert data["build"]["commit"] and data["build"]["extra_params_sampling"] is None  # 76e4a78a is not in it
    assert data["build"]["label"] == "unknown" and "--stage-configs-path was removed by #5647" in result.stderr
    assert _serve_vllm(tmp_path, "--record", record, "--").returncode != 0  # no server command
