"""Every config composes, every key in it is read by code, and bad values are refused with the key named."""

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from clonebench.config.settings import read_settings
from clonebench.core.config_reader import ConfigReader
from clonebench.core.errors import ConfigError
from tests.conftest import CONFIGS, compose

OVERLAYS = ("serving",)  # global-package groups added on top of a primary config (+serving=sweep)
PRIMARY = sorted(
    str(p.relative_to(CONFIGS).with_suffix(""))
    for p in CONFIGS.rglob("*.yaml")
    if (p.parent == CONFIGS or p.read_text().startswith("# @package _global_")) and p.parent.name not in OVERLAYS
)
GROUPS = {d.name: sorted(p.stem for p in d.glob("*.yaml")) for d in CONFIGS.iterdir() if d.is_dir()
          and d.name in ("dataset", "adversary", "evaluation")}
NEEDS = ["dataset.use_hf_dataset=false", "+dataset.manifest_filename=m.json"]


def _overrides(name: str) -> list[str]:
    if name.startswith("suite/"):
        return ["dataset.root_path=/data/RVCBench"]
    cfg = compose(name)
    if OmegaConf.select(cfg, "dataset.manifest_filename") is not None:
        return []
    return NEEDS


@pytest.mark.parametrize("name", PRIMARY)
def test_every_primary_config_composes_and_every_key_is_read(name):
    cfg = compose(name, _overrides(name))
    left = _unread(cfg, name)
    assert left == [], f"{name}: keys never read by code: {left}"


def _unread(cfg, name):
    reader = ConfigReader(cfg, name)
    read_settings(cfg, name, check_unread=False, reader=reader)
    return reader.unread()


@pytest.mark.parametrize("group, option", [(g, o) for g, opts in GROUPS.items() for o in opts])
def test_every_group_option_composes(group, option):
    cfg = compose("vc", [f"{group}={option}", *NEEDS])
    assert _unread(cfg, f"{group}={option}") == []


@pytest.mark.parametrize("base", ["vc", "demo"])
def test_the_serving_overlay_composes_on_a_primary_config(base):
    cfg = compose(base, ["+serving=sweep", *(NEEDS if base == "vc" else [])])
    assert _unread(cfg, f"{base} +serving=sweep") == []
    assert read_settings(cfg, "test").client.measure == "stream"


def test_a_serving_run_needs_both_halves():
    with pytest.raises(ConfigError, match=r"\+serving=sweep"):
        read_settings(compose("vc", ["adversary.measure=stream", *NEEDS]), "test")
    with pytest.raises(ConfigError, match=r"\+serving=sweep"):
        read_settings(compose("vc", ["+serving=sweep", "adversary.measure=ttfb", *NEEDS]), "test")
    with pytest.raises(ConfigError, match="serving.levels"):
        read_settings(compose("vc", ["+serving=sweep", "serving.levels=[4,2]", *NEEDS]), "test")


def test_the_documented_user_command_composes():
    cfg = compose("ots_vc/clean/libritts/fish_audio_s2_ots", [
        "run_name=fish_s2_http_libritts16", "dataset.use_hf_dataset=false",
        "+dataset.manifest_filename=reproduction/subsets/libritts16_v1/metadata.json",
        "dataset.root_path=/data/LibriTTS_eval", "adversary.endpoint_url=http://127.0.0.1:18011/v1/tts",
        "+adversary.service_code_path=/srv/fish-speech", "+adversary.service_checkpoint_path=/srv/s2-pro",
        "+adversary.service_codec_checkpoint_path=/srv/s2-pro/codec.pth", "+vc.generate_only=true", "+seed=42"])
    settings = read_settings(cfg, "test")
    assert settings.seed == 42 and settings.vc.generate_only
    assert settings.client.service_codec_checkpoint_path == Path("/srv/s2-pro/codec.pth")
    assert settings.adversary_params["max_new_tokens"] == 2048
    assert settings.adversary_params["use_memory_cache"] == "off"
    assert settings.dataset.root_path == Path("/data/LibriTTS_eval")


def test_a_misspelt_key_is_refused():
    cfg = compose("demo", ["+adversary.temprature=0.5"])
    with pytest.raises(ConfigError, match=r"adversary.temprature.*not used"):
        read_settings(cfg, "test")


@pytest.mark.parametrize("override, message", [
    ("+seed=true", "seed=True must be an integer"),
    ("+seed=-1", "must be an integer in"),
    ("+seed=2147483648", "must be an integer in"),
    ("+seed='42'", "must be an integer"),
    ("adversary.temperature=1.5", "adversary.temperature"),
    ("adversary.concurrency=0", "adversary.concurrency"),
    ("adversary.request_attempts=true", "adversary.request_attempts"),
    ("adversary.use_memory_cache=maybe", "adversary.use_memory_cache"),
    ("adversary.endpoint_url=ftp://x", "adversary.endpoint_url"),
    ("adversary.protocol=nope", "adversary.protocol='nope' is not registered"),
])
def test_bad_values_name_the_key(override, message):
    cfg = compose("demo", [override])
    with pytest.raises(ConfigError, match=message):
        read_settings(cfg, "test")


def test_seed_aliases_agree_or_fail():
    assert read_settings(compose("demo", ["+vc.seed=7"]), "t").seed == 7
    assert read_settings(compose("demo", ["+adversary.seed=7", "+seed=7"]), "t").seed == 7
    assert read_settings(compose("demo", ["+seed=null"]), "t").seed is None
    assert read_settings(compose("demo"), "t").seed == 42
    with pytest.raises(ConfigError, match="seed keys disagree"):
        read_settings(compose("demo", ["+adversary.seed=7", "+seed=8"]), "t")


def test_manifest_needed_without_hf():
    cfg = compose("ots_vc/clean/libritts/fish_audio_s2_ots", ["dataset.use_hf_dataset=false"])
    with pytest.raises(ConfigError, match=r"\+dataset.manifest_filename"):
        read_settings(cfg, "test")


def test_reader_tracks_reads():
    reader = ConfigReader(OmegaConf.create({"a": {"b": 1, "c": 2}, "hydra": {"x": 1}}), "src")
    reader.int("a.b")
    assert reader.unread() == ["a.c"]


@pytest.mark.parametrize("name, suite", [("suite/onboarding_v1", "onboarding-v1"), ("suite/core_v1", "core-v1"),
                                         ("suite/full_v1", "full-v1")])
def test_suite_configs_name_their_suite_and_need_the_dataset_root(name, suite):
    settings = read_settings(compose(name, ["dataset.root_path=/data/RVCBench", "suite.tasks=[chinese,french]"]), name)
    assert settings.suite.name == suite and settings.suite.tasks == ("chinese", "french")
    assert settings.dataset.root_path == Path("/data/RVCBench")
    with pytest.raises(ConfigError, match=r"set dataset.root_path=DIR"):
        read_settings(compose(name), name)
    with pytest.raises(ConfigError, match="remove dataset.manifest_filename"):
        read_settings(compose(name, ["dataset.root_path=/d", "+dataset.manifest_filename=m.json"]), name)
    with pytest.raises(ConfigError, match=r"suite.tasks=\[\] must be null"):
        read_settings(compose(name, ["dataset.root_path=/d", "suite.tasks=[]"]), name)
