"""The README's scoring override `+vc.evaluation.device=...` is accepted (it was refused as an unread key)."""

from __future__ import annotations

import pytest

from clonebench.config.settings import read_settings
from tests.conftest import compose

OTS = "ots_vc/clean/libritts/fish_audio_s2_ots"


@pytest.mark.parametrize("device", ["cuda:0", "cpu"])
def test_vc_evaluation_device_is_read(device):
    cfg = compose(OTS, ["+vc.evaluate_only=true", f"+vc.evaluation.device={device}",
                        "+vc.evaluation.generated_audio_dir=results/x/generated_audio"])
    assert read_settings(cfg, OTS).evaluation.device == device


def test_precedence_vc_then_group_then_auto():
    both = compose(OTS, ["+vc.evaluation.device=cpu", "evaluation.device=cuda:1"])
    assert read_settings(both, OTS).evaluation.device == "cpu"
    assert read_settings(compose(OTS, ["evaluation.device=cuda:1"]), OTS).evaluation.device == "cuda:1"
    assert read_settings(compose(OTS, []), OTS).evaluation.device is None


@pytest.mark.parametrize("overrides, seed", [([], 42), (["+seed=7"], 42), (["+seed=7", "evaluation.seed=null"], 7),
                                             (["+seed=null", "evaluation.seed=null"], 42),
                                             (["+seed=7", "evaluation.seed=5"], 5)])
def test_scoring_seed_is_fixed_unless_asked_to_follow_the_run_seed(overrides, seed):
    """The scoring seed is rvcbench score's 42 whatever seed generated the run (so runs of different seeds compare);
    evaluation.seed null follows the run seed as rvcbench's runner does; it enters the Whisper scorer's options."""
    evaluation = read_settings(compose(OTS, overrides), OTS).evaluation
    assert evaluation.seed == seed and evaluation.scorer_options["whisper"]["seed"] == seed
    assert evaluation.scorer_options["whisper"]["decoding"] == "fallback_v1"
