"""Settings of the evaluate phase (the ``evaluation`` config group)."""

from __future__ import annotations

from dataclasses import dataclass

from clonebench.config_reader import ConfigReader
from clonebench.errors import ConfigError

KNOWN_METRICS = ("sim", "sva", "wer", "mcd", "dnsmos", "utmos")


@dataclass(frozen=True)
class EvaluationSettings:
    metrics: tuple[str, ...]
    device: str | None


def read_evaluation(reader: ConfigReader) -> EvaluationSettings:
    metrics = tuple(str(m) for m in reader.list("evaluation.metrics"))
    unknown = [m for m in metrics if m not in KNOWN_METRICS]
    if unknown:
        raise ConfigError(f"{reader.source}: evaluation.metrics has unknown metric(s) {unknown}; known: {list(KNOWN_METRICS)}")
    return EvaluationSettings(metrics=metrics, device=reader.str("evaluation.device", None, allow_none=True))
