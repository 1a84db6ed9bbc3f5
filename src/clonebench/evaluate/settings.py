"""Settings of the evaluate phase (the ``evaluation`` config group plus ``vc.evaluation.*``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from clonebench.core.config_reader import ConfigReader
from clonebench.core.errors import ConfigError
from clonebench.evaluate.execution.device import normalise_device
from clonebench.evaluate.protocols.registry import METRIC_GROUPS, WER_BACKENDS
from clonebench.evaluate.protocols.wer_text import NORMALISATIONS
from clonebench.evaluate.scorers.whisper_common import DECODINGS

MAX_CLIP_SECONDS = 600.0  # evaluation.max_clip_seconds's default (configs/evaluation/default.yaml says why)


@dataclass(frozen=True)
class EvaluationSettings:
    metrics: tuple[str, ...]
    device: str | None               # vc.evaluation.device, else evaluation.device; None = auto
    batch_size: int
    cpu_threads: int | None          # torch threads for scoring; None = torch's default
    cpu_workers: int | None          # CPU-pool worker processes (evaluate/execution/cpu_pool.py); None = auto, 0 = none
    cache_dir: Path | None
    bootstrap_resamples: int
    confidence: float
    bootstrap_seed: int
    seed: int                        # evaluation.seed: per-sample scoring seeds and upstream's bootstrap RNG
    generated_audio_dir: Path | None  # vc.evaluation.generated_audio_dir (evaluate_only)
    scorer_options: dict[str, dict[str, Any]]
    task: str | None = None          # vc.evaluation.task: output ids <task>__<pair_id> of an external folder
    max_clip_seconds: float = MAX_CLIP_SECONDS  # evaluation.max_clip_seconds: longest clip scored (its header)


class ScoringSettings(Protocol):
    """What the evaluate phase reads of a run's settings (``config/settings.py``'s ``RunSettings`` has it)."""

    evaluation: EvaluationSettings
    hash_cache: Path | None


UPSTREAM_DEFAULT_SEED = 42  # rvcbench's run seed when none is given, and its suites' evaluation.seed


def read_evaluation(reader: ConfigReader, run_seed: int | None = None) -> EvaluationSettings:
    """``evaluation.seed`` null = the run seed (``+seed``), 42 for an unseeded run: the seed rvcbench's runner
    scores with (its suites set ``evaluation.seed: 42``)."""
    metrics = tuple(str(m) for m in reader.list("evaluation.metrics"))
    unknown = [m for m in metrics if m not in METRIC_GROUPS]
    if unknown or not metrics:
        raise ConfigError(f"{reader.source}: evaluation.metrics has unknown metric(s) {unknown or '[]'}; known: "
                          f"{sorted(METRIC_GROUPS)} (mos and emotion_match are unverified scorers: see docs/scoring.md)")
    seed = reader.int("evaluation.seed", None, minimum=0, allow_none=True)
    if seed is None:
        seed = UPSTREAM_DEFAULT_SEED if run_seed is None else run_seed
    whisper = {
        "decoding": reader.str("evaluation.whisper.decoding", choices=tuple(DECODINGS)),
        "seed": seed,
        "backend": reader.str("evaluation.whisper.backend", choices=WER_BACKENDS),
        "model": reader.str("evaluation.whisper.model"),
        "local_path": reader.path("evaluation.whisper.local_path", None),
        "sha256": reader.str("evaluation.whisper.sha256", None, allow_none=True),
        "normalisation": reader.str("evaluation.whisper.normalisation", choices=tuple(NORMALISATIONS)),
        "compute_type": reader.str("evaluation.whisper.compute_type", "auto"),
        "allow_hub": reader.bool("evaluation.whisper.allow_hub"),
    }
    options = {
        "ecapa": {"threshold": reader.float("evaluation.ecapa.threshold", minimum=-1.0, maximum=1.0),
                  "local_dir": reader.path("evaluation.ecapa.local_dir", None),
                  "allow_hub": reader.bool("evaluation.ecapa.allow_hub"),
                  "workers": reader.int("evaluation.ecapa.workers", None, minimum=0, maximum=1024, allow_none=True)},
        "whisper": whisper,
        "mcd": {},
        "dnsmos": {"local_dir": reader.path("evaluation.dnsmos.local_dir", None)},
        "utmos": {"local_dir": reader.path("evaluation.utmos.local_dir", None),
                  "weights": reader.path("evaluation.utmos.weights", None),
                  "sha256": reader.str("evaluation.utmos.sha256", None, allow_none=True),
                  "allow_hub": reader.bool("evaluation.utmos.allow_hub")},
        "emotion": {"local_dir": reader.path("evaluation.emotion.local_dir", None),
                    "base_dir": reader.path("evaluation.emotion.base_dir", None),
                    "allow_hub": reader.bool("evaluation.emotion.allow_hub")},
        "stoi": {},
        "failures": {},  # a fixed protocol (failures/thresholds.py): no option changes its flags
        "seedtts_sim": {"verifier_checkpoint": reader.path("evaluation.seedtts.verifier_checkpoint", None),
                        "sha256": reader.str("evaluation.seedtts.sha256", None, allow_none=True)},
        "seedtts_whisper": {"local_path": reader.path("evaluation.seedtts.whisper_local_path", None),
                            "sha256": reader.str("evaluation.seedtts.whisper_sha256", None, allow_none=True),
                            "allow_hub": reader.bool("evaluation.seedtts.whisper_allow_hub")},
        "seedtts_paraformer": {"local_path": reader.path("evaluation.seedtts.paraformer_local_path", None),
                               "sha256": reader.str("evaluation.seedtts.paraformer_sha256", None, allow_none=True)},
    }
    # read both (an `or` would skip reading evaluation.device when +vc.evaluation.device is given, and the
    # unread-key check would then refuse the documented commands)
    vc_device = reader.str("vc.evaluation.device", None, allow_none=True)
    group_device = reader.str("evaluation.device", None, allow_none=True)
    # one name per device (cuda -> cuda:0), checked here for its form; against the GPUs when scoring starts
    device = (normalise_device(vc_device, f"{reader.source}: vc.evaluation.device") if vc_device else
              normalise_device(group_device, f"{reader.source}: evaluation.device") if group_device else None)
    return EvaluationSettings(
        metrics=metrics,
        device=device,
        batch_size=reader.int("evaluation.batch_size", minimum=1, maximum=1024),
        cpu_threads=reader.int("evaluation.cpu_threads", None, minimum=1, allow_none=True),
        cpu_workers=reader.int("evaluation.cpu_workers", None, minimum=0, maximum=1024, allow_none=True),
        cache_dir=reader.path("evaluation.cache_dir", None),
        bootstrap_resamples=reader.int("evaluation.bootstrap_resamples", minimum=10),
        confidence=reader.float("evaluation.confidence", minimum=0.5, maximum=0.999),
        bootstrap_seed=reader.int("evaluation.bootstrap_seed", minimum=0),
        seed=seed,
        generated_audio_dir=reader.path("vc.evaluation.generated_audio_dir", None),
        scorer_options=options,
        task=reader.str("vc.evaluation.task", None, allow_none=True),
        max_clip_seconds=reader.float("evaluation.max_clip_seconds", minimum=1.0, maximum=86400.0),
    )
