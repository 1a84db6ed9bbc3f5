"""Settings of a serving run: the ``serving.*`` keys (``configs/serving/``), read only when a config has them."""

from __future__ import annotations

from dataclasses import dataclass

from clonebench.core.config_reader import ConfigReader
from clonebench.core.errors import ConfigError

MODES = ("closed", "open", "both")


@dataclass(frozen=True)
class ServingSettings:
    mode: str                       # closed (N in flight) | open (Poisson arrivals) | both
    levels: tuple[int, ...]         # closed loop: requests kept in flight
    rates: tuple[float, ...]        # open loop: mean arrivals per second
    requests_per_level: int         # measured requests per level (after its ramp)
    warmup_requests: int            # one at a time after the cold request, before any level; excluded
    open_loop_ramp_requests: int    # the first arrivals of an open-loop level; excluded
    prebuffer_s: float              # the simulated player's pre-buffer
    ttfa_budget_s: float            # capacity: p95 TTFA at most this
    starvation_bound: float         # capacity: at most this share of streams starved
    bootstrap_resamples: int
    confidence: float
    quality_under_load: bool = True  # compare each answer under load with the pair's answer sent alone


def _positive_list(reader: ConfigReader, key: str, kind: type) -> tuple:
    values = reader.list(key)
    try:
        out = tuple(kind(v) for v in values if not isinstance(v, bool))
    except (TypeError, ValueError):
        out = ()
    if not values or len(out) != len(values) or any(v <= 0 for v in out) or list(out) != sorted(set(out)):
        raise ConfigError(f"{reader.source}: {key}={values!r} must be a non-empty increasing list of positive "
                          f"{kind.__name__}s, e.g. {key}=[1,2,4,8]")
    return out


def read_serving(reader: ConfigReader) -> ServingSettings | None:
    """None when the config has no ``serving`` section (every run but a serving run)."""
    if not reader.has("serving"):
        return None
    return ServingSettings(
        mode=reader.str("serving.mode", choices=MODES),
        levels=_positive_list(reader, "serving.levels", int),
        rates=_positive_list(reader, "serving.rates", float),
        requests_per_level=reader.int("serving.requests_per_level", minimum=1),
        warmup_requests=reader.int("serving.warmup_requests", minimum=0),
        open_loop_ramp_requests=reader.int("serving.open_loop_ramp_requests", minimum=0),
        prebuffer_s=reader.float("serving.prebuffer_s", minimum=0.0),
        ttfa_budget_s=reader.float("serving.ttfa_budget_s", minimum=0.0),
        starvation_bound=reader.float("serving.starvation_bound", minimum=0.0, maximum=1.0),
        bootstrap_resamples=reader.int("serving.bootstrap_resamples", minimum=100),
        confidence=reader.float("serving.confidence", minimum=0.5, maximum=0.999),
        quality_under_load=reader.bool("serving.quality_under_load"),
    )
