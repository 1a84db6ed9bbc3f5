"""What the Python API (``clonebench.metrics.Evaluator``) accepts: paths, (array, rate), arrays and tensors with
``rate=``, each scored exactly as the same samples in a file; anything else refused with a named error. Empty
and silent clips give no number (the scorers' shared rule in evaluate/protocols/validity.py, the same in a run); the
failure detector gives its verdict on them. MCD only: the lightest scorer, no model to load."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from clonebench.metrics import AudioInputError, Evaluator, RequestError


@pytest.fixture(scope="module")
def clips(human_speech, tmp_path_factory):
    """Two 1.5 s slices of real speech (short: MCD's alignment is quadratic in the length)."""
    folder = tmp_path_factory.mktemp("api_inputs")
    out = []
    for k, path in enumerate(sorted(human_speech["librivox"])[:2]):
        samples, rate = sf.read(str(path), dtype="int16")
        out.append(folder / f"clip{k}.wav")
        sf.write(str(out[-1]), samples[rate // 2: 2 * rate], rate, subtype="PCM_16")
    return tuple(out)


@pytest.fixture(scope="module")
def mcd():
    with Evaluator(["mcd"], device="cpu", config_name="demo") as evaluator:
        yield evaluator


def test_arrays_and_tensors_score_as_their_file(mcd, clips, tmp_path):
    import torch

    generated, target = clips
    samples, rate = sf.read(str(generated), dtype="int16")
    from_file = mcd.score(generated, target=target)["mcd"]
    as_float = samples.astype(np.float32) / 32768
    assert mcd.score((samples, rate), target=target)["mcd"] == from_file  # int16 samples
    assert mcd.score(as_float, rate=rate, target=target)["mcd"] == from_file  # float samples, rate=
    assert mcd.score(torch.from_numpy(as_float)[None, :], rate=rate, target=target)["mcd"] == from_file
    target_samples, target_rate = sf.read(str(target), dtype="float32")
    assert mcd.score(generated, target=(target_samples, target_rate))["mcd"] == from_file


@pytest.mark.parametrize("given, rate, message", [
    (np.zeros(1600, np.float32), None, "without a sample rate"),
    (np.zeros((2, 1600), np.float32), 16000, "not mono audio"),
    (np.zeros(1600, np.float32), 0, "not a positive whole number"),
    (np.array(["a", "b"]), 16000, "not audio"),
    (np.full(1600, np.nan, np.float32), 16000, "NaN or infinite"),
    (b"RIFF....", None, "a bytes is not audio"),
    (3, None, "a int is not audio"),
])
def test_what_is_not_audio_is_refused_by_name(mcd, clips, given, rate, message):
    with pytest.raises(AudioInputError, match=message):
        mcd.score(given, rate=rate, target=clips[1])


def test_a_missing_file_names_its_role(mcd, clips, tmp_path):
    with pytest.raises(FileNotFoundError, match="target: .*missing.wav is not a file"):
        mcd.score(clips[0], target=tmp_path / "missing.wav")


def test_score_many_takes_a_list_or_a_mapping_of_requests(mcd, clips):
    generated, target = clips
    one = mcd.score(generated, target=target)["mcd"]
    named = mcd.score_many({"first": {"generated": generated, "target": target},
                            "swapped": {"generated": target, "target": generated}})
    assert list(named) == ["first", "swapped"] and named["first"] == {"mcd": one, "errors": []}
    with pytest.raises(RequestError, match="score_many takes a list of requests"):
        mcd.score_many({"generated": generated, "target": target})  # one request, not a list of them
    with pytest.raises(RequestError, match="request 0 is a str"):
        mcd.score_many([str(generated)])
    with pytest.raises(ValueError, match="given to two different requests"):
        mcd.score_many([{"generated": generated, "target": target, "sample_id": "a"},
                        {"generated": target, "target": generated, "sample_id": "a"}])


@pytest.mark.parametrize("samples, reason", [(np.zeros(0, np.float32), "is empty"),
                                             (np.zeros(16000, np.float32), "is silent"),
                                             (np.full(16000, 0.0005, np.float32), "is silent")])
def test_empty_and_silent_clips_give_no_number(mcd, clips, samples, reason):
    (result,) = mcd.score_many([{"generated": (samples, 16000), "target": clips[1]}])
    assert result["mcd"] is None and reason in result["errors"][0]
    with pytest.raises(ValueError, match=reason):
        mcd.score(samples, rate=16000, target=clips[1])
    (result,) = mcd.score_many([{"generated": clips[0], "target": (samples, 16000)}])  # a silent target too
    assert result["mcd"] is None and f"target audio {reason}" in result["errors"][0]


def test_the_runs_evaluation_seed_can_be_given():
    """Whisper's per-clip seeds start from the evaluation seed: a run scored with another one is matched by seed=."""
    with Evaluator(["mcd"], device="cpu", config_name="demo", seed=7) as evaluator:
        assert evaluator.settings.evaluation.seed == 7
        assert evaluator.settings.evaluation.scorer_options["whisper"]["seed"] == 7
