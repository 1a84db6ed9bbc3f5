"""Warn once when thread settings will slow scoring (e.g. ``OMP_NUM_THREADS=1`` on a multi-core machine).

Whisper (CTranslate2 / torch), ECAPA (torch) and DNSMOS (ONNX Runtime) use several cores per call; an
inherited ``OMP_NUM_THREADS=1`` (common in cluster job scripts) or a small ``torch.set_num_threads``
confines them to one. Measured on a 2-core CPU: faster-whisper about 1.4x slower. Scores do not change.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)
_warned = False
VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def slow_settings(cores: int, environ=os.environ, torch_threads: int | None = None) -> list[str]:
    """The settings that leave cores idle during scoring, as readable phrases (empty: none)."""
    found = []
    if cores <= 1:
        return found
    for name in VARIABLES:
        value = environ.get(name, "").strip()
        if value.isdigit() and 0 < int(value) < cores:
            found.append(f"{name}={value}")
    if torch_threads is not None and torch_threads < cores:
        found.append(f"torch uses {torch_threads} thread(s) (torch.set_num_threads / evaluation.cpu_threads)")
    return found


def warn_if_slow(torch_threads: int | None = None) -> list[str]:
    """Log one warning per process naming the settings that will slow scoring; returns them."""
    global _warned
    cores = available_cores()
    found = slow_settings(cores, os.environ, torch_threads)
    if found and not _warned:
        _warned = True
        log.warning("scoring will use fewer than the %d cores available: %s. Whisper was measured ~1.4x slower "
                    "with OMP_NUM_THREADS=1 on 2 cores; unset the variable(s) or raise evaluation.cpu_threads "
                    "(scores do not depend on it)", cores, "; ".join(found))
    return found
