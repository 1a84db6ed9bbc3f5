"""adversary.measure=ttfb: streamed requests with time to first byte, total time, audio seconds and RTF."""

from __future__ import annotations

import pytest

from clonebench.core.errors import ClonebenchError, ConfigError
from clonebench.core.records import RunStatus
from clonebench.data.audio import validate_wav
from clonebench.runs.pipeline import run
from clonebench.standin import running_standin
from tests.conftest import compose, generate_run, load_manifest


def test_timing_run_records_latency_figures(tmp_path, dataset):
    with running_standin(latency=0.3, max_lifetime=300) as server:
        status, run_dir = generate_run(tmp_path, dataset, server.url, "adversary.measure=ttfb", "adversary.max_samples=3",
                                       "adversary.reference_check=false")
        quality_status, quality = generate_run(tmp_path, dataset, server.url, "adversary.max_samples=3",
                                               "adversary.reference_check=false", run_dir=tmp_path / "results" / "q")
        streamed = [r for r in server.received if r["path"] == "/v1/tts"]
    manifest = load_manifest(run_dir)
    assert status == RunStatus.GENERATED and manifest["measure"] == "ttfb" and "ttfb_s" in manifest["timing_definitions"]
    for sample in manifest["samples"]:
        assert 0.3 <= sample["ttfb_s"] <= sample["synthesis_time_s"]
        assert sample["rtf"] == pytest.approx(sample["synthesis_time_s"] / sample["duration_s"], rel=1e-3)
        info = validate_wav((run_dir / sample["audio_path"]).read_bytes())
        assert (info.sample_rate, info.subtype) == (44100, "PCM_16")
    assert manifest["fingerprints"]["generation"] != load_manifest(quality)["fingerprints"]["generation"]
    assert all("ttfb_s" not in s for s in load_manifest(quality)["samples"])
    assert len(streamed) == 6
    # timing runs are never scored
    cfg = compose("demo", [f"paths.results_dir={tmp_path / 'results'}", f"dataset.manifest_filename={dataset / 'metadata.json'}",
                           f"dataset.root_path={dataset}", "adversary.max_samples=3", "+vc.evaluate_only=true",
                           f"+vc.evaluation.generated_audio_dir={run_dir / 'generated_audio'}"])
    with pytest.raises(ClonebenchError, match="is a timing run"):
        run(cfg, tmp_path / "results" / "eval", "test")


def test_timing_mode_only_where_implemented(tmp_path, dataset):
    with pytest.raises(ConfigError, match=r"measure=ttfb is implemented for .*fish_s2_http.*s2cpp_http.*, not "
                                          "triton_kserve"):
        generate_run(tmp_path, dataset, "http://127.0.0.1:9", "adversary=triton_kserve", "adversary.measure=ttfb",
                     path="/v2/models/cosyvoice2/infer")


@pytest.mark.parametrize("protocol, path, extra", [  # s2.cpp's stream: test_serving_run (its gate needs voices)
    ("sglang_omni", "/v1/audio/speech", ("adversary=sglang_omni_speech", "SHARE")),
    ("openai", "/v1/audio/speech", ("adversary=openai_speech", "adversary.stream_format=sse")),
])
def test_a_timing_run_of_the_streamed_answers_keeps_whole_wavs(tmp_path, dataset, protocol, path, extra):
    """SGLang-Omni's and vLLM-Omni's events: each answer timed (its first byte: the first event, 0.3 s on the script),
    then kept as the whole WAV its events carried (1.2 s at 44.1 kHz)."""
    from clonebench.standin.stream_profile import parse_profile

    share = tmp_path / "share"
    share.mkdir()
    extra = [f"adversary.reference_share.local_dir={share}" if o == "SHARE" else o for o in extra]
    profile = parse_profile("first=0.3,rtf=0.2,chunk=0.4,audio=1.2")
    with running_standin(protocol=protocol, tone=True, stream_profile=profile, references_dir=share,
                         max_lifetime=120) as server:
        status, run_dir = generate_run(tmp_path, dataset, server.url, "adversary.measure=ttfb",
                                       "adversary.max_samples=2", "adversary.reference_check=false", *extra,
                                       path=path)
    manifest = load_manifest(run_dir)
    assert status == RunStatus.GENERATED and manifest["measure"] == "ttfb"
    for sample in manifest["samples"]:
        info = validate_wav((run_dir / sample["audio_path"]).read_bytes())
        assert (info.sample_rate, info.subtype, info.frames) == (44100, "PCM_16", 52920)
        assert 0.3 <= sample["ttfb_s"] < sample["synthesis_time_s"]
