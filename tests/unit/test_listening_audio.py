"""The audio of a listening test: the MUSHRA 3.5 kHz anchor filter's response, the BS.1770 loudness calibration,
and clips written at one rate and one loudness (real LibriVox speech at several levels and rates)."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
from scipy.signal import resample_poly, welch

from clonebench.core.hashing import sha256_file
from clonebench.listening import audio

RATE = audio.RATE


def band_db(filtered: np.ndarray, original: np.ndarray, low: float, high: float) -> np.ndarray:
    f, p_out = welch(filtered, RATE, nperseg=4096)
    _, p_in = welch(original, RATE, nperseg=4096)
    band = (f >= low) & (f <= high)
    return 10 * np.log10(p_out[band] / p_in[band])


def test_the_anchor_is_a_3500_hz_low_pass():
    noise = np.random.default_rng(0).normal(size=RATE * 8)
    anchor = audio.lowpass_3500(noise)
    assert np.abs(band_db(anchor, noise, 50, 2500)).max() < 0.5          # pass band untouched
    assert band_db(anchor, noise, 3450, 3550).mean() == pytest.approx(-6, abs=1)  # -6 dB at the cut-off
    assert band_db(anchor, noise, 5000, 23000).max() < -40              # stop band
    assert np.corrcoef(audio.lowpass_3500(np.sin(np.arange(RATE) * 2 * np.pi * 500 / RATE)),
                       np.sin(np.arange(RATE) * 2 * np.pi * 500 / RATE))[0, 1] > 0.999  # zero phase: time-aligned
    short = audio.lowpass_3500(noise[:20])  # shorter than the filter's edge padding: filtered all the same
    assert short.shape == (20,) and np.isfinite(short).all()


def test_the_degraded_clip_is_low_passed_speech_under_noise_at_0_db_snr():
    x = np.random.default_rng(1).normal(size=RATE * 2) * 0.1
    degraded = audio.degrade(x, "seed-text")
    noise = degraded - audio.lowpass_3500(x)
    assert 10 * np.log10(np.mean(audio.lowpass_3500(x) ** 2) / np.mean(noise ** 2)) == pytest.approx(0, abs=0.2)
    assert np.array_equal(degraded, audio.degrade(x, "seed-text"))     # seeded per source


def test_loudness_follows_bs1770_calibration():
    """BS.1770: a 997 Hz sine at full scale on one channel reads -3.01 LUFS; -20 dB of amplitude reads -23.01."""
    t = np.arange(RATE * 5) / RATE
    assert audio.loudness(np.sin(2 * np.pi * 997 * t)) == pytest.approx(-3.01, abs=0.05)
    assert audio.loudness(0.1 * np.sin(2 * np.pi * 997 * t)) == pytest.approx(-23.01, abs=0.05)
    assert audio.loudness(0.1 * np.sin(2 * np.pi * 997 * t[:RATE // 10])) == pytest.approx(-23.01, abs=0.1)  # 0.1 s
    assert audio.loudness(np.zeros(RATE)) is None


def test_clips_come_out_at_one_rate_and_one_loudness(human_speech, tmp_path):
    speech = list(human_speech["librivox"])[:2]
    x, rate = sf.read(speech[0], dtype="float64")
    sources = {}
    for name, gain, new_rate in (("quiet", 0.05, 24000), ("loud", 0.9, 44100), ("same", 0.3, rate)):
        path = tmp_path / f"{name}.wav"
        y = resample_poly(x, new_rate, rate) if new_rate != rate else x
        sf.write(path, np.stack([y, y], axis=1) * gain / np.abs(y).max(), new_rate, subtype="FLOAT")  # stereo
        sources[f"c-{name}"] = (path, sha256_file(path), "none")
    sf.write(tmp_path / "silence.wav", np.zeros(8000), 16000)
    sources["c-silence"] = (tmp_path / "silence.wav", sha256_file(tmp_path / "silence.wav"), "none")
    sources["c-anchor"] = (sources["c-loud"][0], sources["c-loud"][1], "lowpass_3500")
    out = tmp_path / "clips"
    out.mkdir()
    result = audio.write_clips(sources, out)
    policy = result["policy"]
    assert policy["target_lufs"] == audio.TARGET_LUFS and policy["rate_hz"] == RATE
    for clip_id in ("c-quiet", "c-loud", "c-same", "c-anchor"):
        y, rate = sf.read(out / f"{clip_id}.wav")
        info = sf.info(out / f"{clip_id}.wav")
        assert (rate, info.channels, info.subtype) == (RATE, 1, "PCM_16")
        assert audio.loudness(y) == pytest.approx(audio.TARGET_LUFS, abs=0.2), clip_id
        record = result["clips"][clip_id]
        assert record["peak_dbfs"] <= audio.PEAK_CEILING_DBFS and record["file_sha256"] == sha256_file(out / f"{clip_id}.wav")
    gains = {c: result["clips"][c]["gain_db"] for c in ("c-quiet", "c-loud", "c-same")}
    assert gains["c-quiet"] - gains["c-loud"] == pytest.approx(20 * np.log10(0.9 / 0.05), abs=0.2)
    assert result["clips"]["c-silence"]["gain_db"] == 0 and result["clips"]["c-silence"]["loudness_lufs"] is None


def test_a_clip_that_would_clip_lowers_the_target_of_every_clip(tmp_path):
    rng = np.random.default_rng(2)
    spiky = rng.normal(size=RATE * 2) * 0.035
    spiky[RATE] = 0.9  # one spike: about 25 dB of peak over loudness, more than -1 dBFS - (-23 LUFS) allows
    speechlike = rng.normal(size=RATE * 2) * 0.05
    sources = {}
    for name, signal in (("spiky", spiky), ("noise", speechlike)):
        sf.write(tmp_path / f"{name}.wav", signal, RATE, subtype="FLOAT")
        sources[name] = (tmp_path / f"{name}.wav", name, "none")
    (tmp_path / "out").mkdir()
    result = audio.write_clips(sources, tmp_path / "out")
    target = result["policy"]["target_lufs"]
    needed = audio.PEAK_CEILING_DBFS - (audio.peak_db(spiky) - audio.loudness(spiky))
    assert target == pytest.approx(needed, abs=1e-3) and audio.TARGET_LUFS - audio.MAX_LOWERING_DB < target < -24
    assert result["policy"]["peak_limited"] == []
    for name in sources:
        y, _ = sf.read(tmp_path / "out" / f"{name}.wav")
        assert audio.loudness(y) == pytest.approx(target, abs=0.3)
        assert 20 * np.log10(np.abs(y).max()) <= audio.PEAK_CEILING_DBFS + 0.01


def test_one_extreme_clip_is_peak_limited_instead_of_making_every_clip_quiet(tmp_path):
    click = np.zeros(RATE)
    click[RATE // 2] = 0.99  # one click in silence: a peak 30+ dB above its loudness
    speechlike = np.random.default_rng(4).normal(size=RATE * 2) * 0.05
    sources = {}
    for name, signal in (("click", click), ("noise", speechlike)):
        sf.write(tmp_path / f"{name}.wav", signal, RATE, subtype="FLOAT")
        sources[name] = (tmp_path / f"{name}.wav", name, "none")
    (tmp_path / "out").mkdir()
    result = audio.write_clips(sources, tmp_path / "out")
    assert result["policy"]["target_lufs"] == audio.TARGET_LUFS - audio.MAX_LOWERING_DB
    assert result["policy"]["peak_limited"] == ["click"] and result["clips"]["click"]["peak_dbfs"] <= -0.99
    y, _ = sf.read(tmp_path / "out" / "noise.wav")
    assert audio.loudness(y) == pytest.approx(audio.TARGET_LUFS - audio.MAX_LOWERING_DB, abs=0.3)
