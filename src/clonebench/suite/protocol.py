"""A suite task's scoring protocol: the evaluate phase's settings with the suite's metrics, WER normalisation and
bootstrap (rvcbench's ``_metrics_for`` and suite ``evaluation`` block), everything else as configured."""

from __future__ import annotations

import dataclasses
import logging

from clonebench.core.errors import ConfigError
from clonebench.evaluate.protocols.wer_text import NORMALISATIONS
from clonebench.evaluate.settings import EvaluationSettings
from clonebench.suite.definition import UPSTREAM_METRICS, Suite, Task

log = logging.getLogger(__name__)


def task_evaluation(base: EvaluationSettings, suite: Suite, task: Task) -> EvaluationSettings:
    """``base`` with the task's required metrics (clonebench names), the suite's WER normalisation, evaluation seed
    (Whisper's per-sample seeds, upstream's bootstrap RNG) and bootstrap; plus ``fail`` (failure modes, not an
    rvcbench metric: no upstream aggregate, no draw from upstream's RNG) when ``base.metrics`` asks for it."""
    protocol = suite.evaluation
    if protocol.generated_audio_max_seconds is not None:
        raise ConfigError(f"suite {suite.name}: generated_audio_max_seconds={protocol.generated_audio_max_seconds} "
                          "(scoring only the first seconds of each clip) is not implemented by clonebench's evaluate "
                          "phase; the shipped suites set it to null")
    if protocol.wer_normalization not in NORMALISATIONS:
        raise ConfigError(f"suite {suite.name}: WER normalisation {protocol.wer_normalization!r} is not one clonebench "
                          f"implements ({sorted(NORMALISATIONS)})")
    metrics = tuple(UPSTREAM_METRICS[m] for m in suite.metrics(task))
    if "fail" in base.metrics and "fail" not in metrics:  # failure modes: clonebench's, asked for in the run's
        metrics = (*metrics, "fail")                        # evaluation.metrics; added to every task's own
    whisper = {**base.scorer_options["whisper"], "normalisation": protocol.wer_normalization, "seed": protocol.seed}
    if base.scorer_options["whisper"]["normalisation"] != protocol.wer_normalization:
        log.info("suite %s: WER normalisation %s (the suite's), not evaluation.whisper.normalisation=%s", suite.name,
                 protocol.wer_normalization, base.scorer_options["whisper"]["normalisation"])
    boot = protocol.bootstrap
    return dataclasses.replace(
        base, metrics=metrics, seed=protocol.seed, scorer_options={**base.scorer_options, "whisper": whisper},
        bootstrap_resamples=boot.num_samples if boot.enabled else base.bootstrap_resamples,
        confidence=boot.confidence_level if boot.enabled else base.confidence)


def protocol_record(protocol: EvaluationSettings, suite: Suite, task: Task) -> dict:
    """The task's protocol as its scoring manifest records it (``task_evaluation``; suite results read its
    bootstrap settings back)."""
    return {"metrics": list(protocol.metrics), "wer_normalisation": protocol.scorer_options["whisper"]["normalisation"],
            "bootstrap_resamples": protocol.bootstrap_resamples, "confidence": protocol.confidence,
            "bootstrap_seed": protocol.bootstrap_seed, "upstream_metrics": list(suite.metrics(task))}
