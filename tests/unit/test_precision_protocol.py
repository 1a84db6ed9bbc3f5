"""Precision in the protocol: the flags a GPU scorer runs under (forced IEEE float32, restored after), each scorer's
precision in its protocol and fingerprint, the thread count only where it changes numbers, and ``compare`` /
``compare-check`` refusing mixed precision unless told, naming it."""

from __future__ import annotations

import functools

import pytest

from clonebench.core.hashing import HashCache
from clonebench.evaluate import scoring as phase
from clonebench.evaluate.execution import cuda_env, device, precision
from tests.unit.test_gpu_device import fake_torch

WHISPER = {"backend": "faster_whisper", "model": "tiny.en", "local_path": None, "sha256": None,
           "normalisation": "ascii_punctuation_removed_v2", "compute_type": "auto", "allow_hub": False}


def test_the_gpu_policy_forces_ieee_fp32_and_restores_the_flags():
    import torch

    backends = torch.backends
    before = precision.cuda_flags()
    backends.cudnn.benchmark = True
    try:
        with precision.policy("cuda:0"):
            inside = precision.cuda_flags()
        assert inside["cuda.matmul.fp32_precision"] == inside["cudnn.conv.fp32_precision"] == "ieee"
        assert inside["cudnn.rnn.fp32_precision"] == "ieee"
        assert inside["cudnn.benchmark"] is False and inside["cudnn.deterministic"] is True
        assert precision.cuda_flags() == {**before, "cudnn.benchmark": True}  # restored
        with precision.policy("cuda:0", tf32=True):
            assert precision.cuda_flags()["cudnn.conv.fp32_precision"] == "tf32"
        with precision.policy("cpu"):
            assert precision.cuda_flags() == {**before, "cudnn.benchmark": True}  # a CPU run changes nothing
    finally:
        backends.cudnn.benchmark = before["cudnn.benchmark"]
    # torch's own default computes cuDNN convolutions in TF32: the reason for the policy
    assert before["cudnn.conv.fp32_precision"] == "tf32"


def test_each_scorer_states_its_precision():
    from clonebench.evaluate.scorers.ecapa import EcapaScorer
    from clonebench.evaluate.scorers.mcd import MCDScorer
    from clonebench.evaluate.scorers.whisper_faster import FasterWhisperScorer
    from clonebench.evaluate.scorers.whisper_openai import OpenAIWhisperScorer

    cache = HashCache(None)
    openai = {**WHISPER, "backend": "openai_whisper", "model": "medium"}
    assert OpenAIWhisperScorer(openai, "cuda:0", cache).precision() == "float16"  # transcribe()'s default there
    assert OpenAIWhisperScorer(openai, "cpu", cache).precision() == "float32"
    assert FasterWhisperScorer(WHISPER, "cuda:0", cache).precision() == "float16"
    assert FasterWhisperScorer(WHISPER, "cpu", cache).precision() == "float32"
    assert FasterWhisperScorer({**WHISPER, "compute_type": "int8_float16"}, "cuda:1", cache).precision() == "int8_float16"
    substituted = FasterWhisperScorer(WHISPER, "cuda:0", cache)
    substituted._model = type("M", (), {"model": type("CT2", (), {"compute_type": "float32"})()})()
    assert substituted.precision() == "float32"  # what CTranslate2 actually runs, when it substituted a type
    assert EcapaScorer({"threshold": 0.25}, "cuda:0", cache).precision() == "float32"
    assert MCDScorer({}, "cpu", cache).precision() == "float64"


def test_precision_enters_protocol_and_fingerprint():
    from clonebench.evaluate.scorers.whisper_faster import FasterWhisperScorer

    cache = HashCache(None)
    fp32 = phase.scorer_provenance(FasterWhisperScorer(WHISPER, "cpu", cache), 8, 2)
    int8 = phase.scorer_provenance(FasterWhisperScorer({**WHISPER, "compute_type": "int8"}, "cpu", cache), 8, 2)
    assert fp32["protocol"]["precision"] == "float32" and int8["protocol"]["precision"] == "int8"
    assert fp32["execution"]["compute_type"] == "float32" and fp32["fingerprint"] != int8["fingerprint"]


def test_threads_enter_the_fingerprint_only_where_they_change_numbers(monkeypatch):
    from clonebench.evaluate.execution.cpu_pool import CpuPool
    from clonebench.evaluate.scorers.dnsmos import DNSMOSScorer
    from clonebench.evaluate.scorers.ecapa import EcapaScorer
    from clonebench.evaluate.scorers.mcd import MCDScorer
    from clonebench.evaluate.scorers.stoi import STOIScorer

    cache = HashCache(None)
    ecapa_cpu, ecapa_gpu = EcapaScorer({"threshold": 0.25}, "cpu", cache), EcapaScorer({"threshold": 0.25}, "cuda:0", cache)
    assert phase.fingerprint_threads(ecapa_cpu, False, 16) == 16  # torch on a CPU: numbers may follow the count
    assert phase.fingerprint_threads(ecapa_gpu, False, 16) is None
    assert phase.fingerprint_threads(MCDScorer({}, "cpu", cache), False, 16) is None
    assert phase.fingerprint_threads(DNSMOSScorer({}, "cpu", cache), True, 16) is None
    stoi = STOIScorer({}, "cpu", cache)
    assert phase.fingerprint_threads(stoi, True, 16) == CpuPool.threads == 1 and phase.fingerprint_threads(stoi, False, 16) == 16
    # a GPU scorer scored on nodes with 16 and 4 cores: one fingerprint, so the shards merge
    monkeypatch.setattr(cuda_env, "driver_release", lambda: "580.65.06")
    prints = []
    for threads in (16, 4):
        monkeypatch.setattr(phase, "execution", functools.partial(device.execution, torch_module=fake_torch(threads=threads)))
        block = phase.scorer_provenance(ecapa_gpu, 8, phase.fingerprint_threads(ecapa_gpu, False, threads))
        prints.append(block["fingerprint"])
        assert block["host"]["cpu_threads"] == threads and "cpu_threads" not in block["execution"]
    assert prints[0] == prints[1]
    monkeypatch.setattr(phase, "execution", functools.partial(device.execution, torch_module=fake_torch(capability=(8, 0))))
    assert phase.scorer_provenance(ecapa_gpu, 8, None)["fingerprint"] != prints[0]  # another GPU generation


def _table(precision_value: str, device_name: str, fingerprint: str, **protocol):
    from clonebench.report.tables import ResultTable

    wer = {"backend": "faster_whisper", "model": "base", "weights_sha256": "a" * 64, "normalisation": "x",
           "precision": precision_value, **protocol}
    return ResultTable(label=device_name, rows=[], status="complete", generation_status="generated",
                       seed_policy="per_sample_seed", seed=42, seed_honoured=True, input_fingerprint="f" * 64,
                       protocols={"wer": wer, "sim": {"model": "ecapa", "precision": "float32"}},
                       fingerprints={"wer": fingerprint, "sim": f"sim-{device_name}"},
                       executions={"wer": {"device": device_name}, "sim": {"device": device_name}})


def test_compare_check_names_mixed_precision_and_accepts_it_when_told():
    from clonebench.report.compatibility import differences

    gpu, cpu = _table("float16", "cuda:0", "g"), _table("float32", "cpu", "c")
    found = differences(gpu, cpu)
    assert "wer precision: float16 vs float32 (cuda:0 vs cpu): mixed precision; re-score alike, or pass " \
           "--allow-mixed-precision to compare anyway" in found
    assert any(line.startswith("sim scorer fingerprint: sim-cuda:0 vs sim-cpu (execution: device 'cuda:0' vs 'cpu')")
               for line in found)
    notes = []
    assert differences(gpu, cpu, allow_mixed_precision=True, notes=notes) == []
    assert "wer: scored differently (precision float16 vs float32, cuda:0 vs cpu), accepted " \
           "(--allow-mixed-precision)" in notes
    other = _table("float16", "cpu", "o", normalisation="lowercase_v1")
    assert differences(gpu, other, allow_mixed_precision=True)[0] == \
        "wer scorer protocol differs: normalisation 'x' vs 'lowercase_v1'"


def test_compare_refuses_mixed_precision_unless_told():
    from clonebench.report.compare import IncomparableError, check_protocols

    gpu, cpu = _table("float16", "cuda:0", "g"), _table("float32", "cpu", "c")
    with pytest.raises(IncomparableError, match=r"wer: cuda:0 was scored differently from cpu: precision "
                                                r"'float16 \(mixed precision\)' vs 'float32'.*fix: the same "
                                                r"vc.evaluation.device kind and evaluation.whisper.compute_type, or "
                                                r"--allow-mixed-precision"):
        check_protocols(gpu, cpu, ("wer",))
    checked = check_protocols(gpu, cpu, ("wer", "sim"), allow_mixed_precision=True)
    assert checked["wer"] == "same protocol but precision float16 vs float32 (accepted: --allow-mixed-precision)"
    assert checked["sim"] == "same protocol"
    historical = _table("float32", "historical", "h")
    del historical.protocols["wer"]["precision"]
    assert check_protocols(gpu, historical, ("wer",))["wer"] == "same protocol (precision not recorded on the " \
                                                              "historical side)"
