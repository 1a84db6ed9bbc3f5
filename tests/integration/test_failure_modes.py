"""The failure-modes detector end to end on the crafted clips (tests/crafted_failures.py): ``fail`` through the public
Evaluator with the real faster-whisper base model (config demo), so the ASR flags (babble, wrong_language,
transcript repeats) read real Whisper values; every case raises its expected flags and none of its forbidden ones,
and a second scoring is served from the metric cache (no scorer runs)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def scored(crafted_cases, tmp_path_factory):
    """(Evaluator with a metric cache, the requests, their results with details), scored once."""
    from clonebench.metrics import Evaluator

    requests = [{"generated": str(c.wav), "text": c.target_text, "language": c.language, "prompt": str(c.prompt_wav),
                 "prompt_text": c.prompt_text, "prompt_language": c.language} for c in crafted_cases.values()]
    evaluator = Evaluator(["fail"], device="cpu", config_name="demo", cache_dir=tmp_path_factory.mktemp("fm_cache"))
    try:
        yield evaluator, requests, evaluator.score_many(requests, details=True)
    finally:
        evaluator.close()


def test_every_crafted_case_raises_its_flags_and_none_forbidden(crafted_cases, scored):
    evaluator, _, results = scored
    assert set(evaluator.provenance) == {"failures", "whisper"}  # fail also scores the Whisper group
    problems = []
    for case, result in zip(crafted_cases.values(), results):
        assert not result["errors"], (case.name, result["errors"])
        flags = set(filter(None, result["failures"].split(";")))
        assert result["fail"] == (1.0 if flags else 0.0)
        if not case.expected <= flags or case.forbidden & flags:
            problems.append(f"{case.name}: raised {sorted(flags)}, expected {sorted(case.expected)}, forbidden "
                            f"{sorted(case.forbidden & flags)}; {result['failure_detail']}")
    assert not problems, "\n".join(problems)


def test_a_second_scoring_comes_from_the_cache(scored):
    evaluator, requests, first = scored

    def refuse(items):
        raise AssertionError(f"recomputed {len(items)} items instead of reading the cache")

    scorers = evaluator._scorers
    saved = {group: scorer.score_batch for group, scorer in scorers.items()}
    for scorer in scorers.values():
        scorer.score_batch = refuse
    try:
        again = evaluator.score_many(requests, details=True)
    finally:
        for group, scorer in scorers.items():
            scorer.score_batch = saved[group]
    assert again == first
