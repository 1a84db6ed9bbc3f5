"""The stand-in's failure behaviours (``clonebench.standin.behaviours``): a valid 200 WAV with bad content, checked
by what can be measured in it, against a real stand-in on loopback (Fish and CosyVoice protocols), and the
deterministic, order-free selection by fraction."""

from __future__ import annotations

import hashlib
import io
import json

import httpx
import numpy as np
import ormsgpack
import pytest
import soundfile as sf
from scipy.signal import resample_poly

from clonebench.standin import running_standin
from clonebench.standin.__main__ import main as standin_main
from clonebench.standin.behaviours import (
    BEHAVIOURS,
    LOOP_GAP_S,
    apply,
    parse_behaviours,
    pick,
)
from clonebench.standin.faults import FaultPlan
from clonebench.standin.server import StandinServer
from clonebench.standin.voice import espeak

TEXT = "The quick brown fox jumps over the lazy dog."
PROMPT_RATE = 24_000


@pytest.fixture(scope="module")
def prompt_wav() -> bytes:
    """A stereo 24 kHz reference: prompt_copy must downmix and resample it to the output rate."""
    speech = espeak("A reference recording for the stand-in.", "en-us+f3", 70, 160, PROMPT_RATE)
    out = io.BytesIO()
    sf.write(out, np.stack([speech, 0.9 * speech], axis=1), PROMPT_RATE, subtype="PCM_16", format="WAV")
    return out.getvalue()


@pytest.fixture(scope="module")
def fish():
    with running_standin(protocol="fish", max_lifetime=120) as server:
        yield server


def fish_tts(server, text: str, prompt: bytes, fault: dict | None = None) -> tuple[np.ndarray, int]:
    server.faults.clear()
    if fault is not None:
        server.faults.add([fault])
    body = ormsgpack.packb({"text": text, "seed": 7, "references": [{"audio": prompt, "text": "A reference."}]})
    reply = httpx.post(f"{server.url}/v1/tts", content=body, headers={"Content-Type": "application/msgpack"},
                       timeout=30)
    assert reply.status_code == 200, reply.text
    samples, rate = sf.read(io.BytesIO(reply.content), dtype="float32")
    return samples, rate


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    n = min(len(a), len(b))
    return float(np.corrcoef(a[:n], b[:n])[0, 1])


@pytest.fixture(scope="module")
def normal(fish, prompt_wav):
    return fish_tts(fish, TEXT, prompt_wav)


def test_loop_repeats_the_utterance_three_times(fish, prompt_wav, normal):
    speech, rate = normal
    looped, loop_rate = fish_tts(fish, TEXT, prompt_wav, {"kind": "behave", "as": "loop"})
    assert loop_rate == rate
    gap = int(LOOP_GAP_S * rate)
    assert len(looped) == pytest.approx(3 * len(speech) + 2 * gap, abs=2)
    assert len(looped) / len(speech) == pytest.approx(3.0, rel=0.1)
    repeats = [looped[k * (len(speech) + gap):][: len(speech)] for k in range(3)]
    assert correlation(repeats[0], repeats[1]) > 0.99 and correlation(repeats[0], repeats[2]) > 0.99
    assert correlation(repeats[0], speech) > 0.99


def test_truncate_keeps_the_first_forty_percent(fish, prompt_wav, normal):
    speech, _ = normal
    cut, _ = fish_tts(fish, TEXT, prompt_wav, {"kind": "behave", "as": "truncate"})
    assert len(cut) / len(speech) == pytest.approx(0.4, abs=0.01)
    assert correlation(cut, speech[: len(cut)]) > 0.99


def test_prompt_copy_answers_the_reference(fish, prompt_wav):
    copied, rate = fish_tts(fish, TEXT, prompt_wav, {"kind": "behave", "as": "prompt_copy"})
    prompt, prompt_rate = sf.read(io.BytesIO(prompt_wav), dtype="float32")
    assert rate != prompt_rate and copied.ndim == 1  # re-encoded at the output rate, mono: not byte-identical
    assert correlation(resample_poly(copied, 16_000, rate), resample_poly(prompt.mean(axis=1), 16_000, prompt_rate)) \
        >= 0.95


def test_silence_is_two_seconds_below_minus_sixty_dbfs(fish, prompt_wav):
    quiet, rate = fish_tts(fish, TEXT, prompt_wav, {"kind": "behave", "as": "silence"})
    assert len(quiet) / rate == pytest.approx(2.0, abs=0.01)
    assert 20 * np.log10(np.max(np.abs(quiet)) + 1e-12) < -60
    assert np.sqrt(np.mean(quiet ** 2)) > 0  # noise, not digital zero


def test_a_sticky_behave_fault_applies_to_every_request_of_another_protocol(prompt_wav):
    """CosyVoice answers through its own module (raw 24 kHz PCM): the behaviour is applied there too."""
    with running_standin(protocol="cosyvoice", max_lifetime=120) as server:
        server.faults.set_sticky({"kind": "behave", "as": "prompt_copy"})
        for text in ("One sentence.", "Another one."):
            reply = httpx.post(f"{server.url}/inference_zero_shot", data={"tts_text": text, "prompt_text": "A ref."},
                               files={"prompt_wav": ("prompt.wav", prompt_wav, "audio/wav")}, timeout=30)
            assert reply.status_code == 200
            pcm = np.frombuffer(reply.content, dtype="<i2").astype(np.float32) / 32768
            prompt, _ = sf.read(io.BytesIO(prompt_wav), dtype="float32")
            assert correlation(pcm, prompt.mean(axis=1)) >= 0.95  # both at 24 kHz


def test_selection_by_fraction_is_the_same_on_two_servers_whatever_the_order(prompt_wav):
    texts = [f"Sentence number {n} for the stand-in." for n in range(8)]
    reference = hashlib.sha256(prompt_wav).hexdigest()
    expected = {text: pick(text, reference, {"silence": 0.5}) for text in texts}
    assert set(expected.values()) == {"silence", None}  # both outcomes occur among these texts
    seen = []
    for order in (texts, texts[::-1]):
        with running_standin(protocol="fish", max_lifetime=120, behaviours="silence=0.5") as server:
            got = {}
            for text in order:
                samples, _ = fish_tts(server, text, prompt_wav)
                got[text] = "silence" if np.max(np.abs(samples)) < 1e-3 else None
            seen.append(got)
    assert seen[0] == seen[1] == expected


def test_fractions_are_roughly_met_and_independent_of_the_spec_order():
    fractions = parse_behaviours("loop=0.25,truncate=0.15,prompt_copy=0.1")
    assert parse_behaviours("prompt_copy=0.1, truncate=0.15, loop=0.25") == fractions
    picks = [pick(f"synthetic text {n}", hashlib.sha256(str(n % 7).encode()).hexdigest(), fractions)
             for n in range(400)]
    for name, fraction in fractions.items():
        assert picks.count(name) / len(picks) == pytest.approx(fraction, abs=0.08)
    assert picks.count(None) / len(picks) == pytest.approx(0.5, abs=0.08)
    assert picks.count("silence") == 0
    again = [pick(f"synthetic text {n}", hashlib.sha256(str(n % 7).encode()).hexdigest(), fractions)
             for n in range(400)]
    assert again == picks
    assert pick("anything", "00", {}) is None
    assert all(pick(f"t{n}", "00", {"loop": 1.0}) == "loop" for n in range(20))


@pytest.mark.parametrize("spec", ["loopy=0.1", "loop=0.1,echo=0.2"])
def test_unknown_behaviour_names_are_refused(spec):
    bad = spec.split(",")[-1].split("=")[0]
    with pytest.raises(ValueError, match=rf"'{bad}'.*allowed: loop, truncate, prompt_copy, silence"):
        parse_behaviours(spec)
    with pytest.raises(ValueError, match=bad):
        StandinServer(("127.0.0.1", 0), behaviours=spec)
    with pytest.raises(ValueError, match=bad):
        StandinServer(("127.0.0.1", 0), behaviours={bad: 0.1})


@pytest.mark.parametrize("spec, message", [("loop=1.5", "outside"), ("loop=0.7,silence=0.4", "more than 1"),
                                           ("loop", "NAME=FRACTION"), ("loop=x", "not a number"),
                                           ("loop=0.1,loop=0.2", "twice")])
def test_bad_fractions_are_refused(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_behaviours(spec)


def test_behave_faults_name_a_known_behaviour(fish, capsys):
    plan = FaultPlan()
    for fault in ({"kind": "behave", "as": "echo"}, {"kind": "behave"}):
        with pytest.raises(ValueError, match=r"unknown failure behaviour .*allowed: loop, truncate"):
            plan.add([fault])
        with pytest.raises(ValueError, match="unknown failure behaviour"):
            plan.set_sticky(fault)
    assert plan.queue == [] and plan.sticky is None
    reply = httpx.post(f"{fish.url}/_standin/faults", content=json.dumps({"sticky": {"kind": "behave", "as": "echo"}}))
    assert reply.status_code == 400 and "'echo'" in reply.json()["message"]
    assert fish.faults.sticky is None
    with pytest.raises(SystemExit) as exit_info:
        standin_main(["--behaviours", "loop=0.1,echo=0.2"])
    assert exit_info.value.code == 2
    assert "unknown failure behaviour 'echo'" in capsys.readouterr().err
    assert set(BEHAVIOURS) == {"loop", "truncate", "prompt_copy", "silence"}


def test_prompt_copy_without_a_reference_answers_normally():
    speech = io.BytesIO()
    sf.write(speech, np.zeros(100, dtype=np.float32), 44_100, subtype="PCM_16", format="WAV")
    assert apply("prompt_copy", speech.getvalue(), b"", 1) == speech.getvalue()
