"""Threads during scoring: warn once when settings will slow it (e.g. ``OMP_NUM_THREADS=1`` on a multi-core
machine), and pin numpy's BLAS to one thread (:func:`pin_blas_threads`).

Whisper (CTranslate2 / torch), ECAPA (torch) and DNSMOS (ONNX Runtime) use several cores per call; an
inherited ``OMP_NUM_THREADS=1`` (common in cluster job scripts) or a small ``torch.set_num_threads``
confines them to one. Measured on a 2-core CPU: faster-whisper about 1.4x slower.

numpy's BLAS (OpenBLAS) splits a matrix product differently for each thread count, and the audio features that
feed two scorers are such products: faster-whisper's log-mel (``filters @ magnitudes``) and DNSMOS's P.808
mel spectrogram can differ in their last bits between 1 and 2 BLAS threads (they did on the 2-core machine the
project was measured on; whether they do is a fact about the host's BLAS, which tests/integration/
test_thread_dependence.py records), so their scores could follow the host's core count, on a GPU host too. Scoring
therefore pins numpy's BLAS to one thread for the rest of the process (threadpoolctl; the products are small,
the models keep their own thread pools), as the CPU pool's workers are (evaluate/execution/cpu_pool.py).
"""

from __future__ import annotations

import logging
import os
import threading

log = logging.getLogger(__name__)
_warned = False
_blas_pinned: list = []  # the threadpoolctl limiters, kept for the life of the process
_pin_lock = threading.Lock()
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


def pin_blas_threads() -> None:
    """numpy's and scipy's BLAS on one thread from now on in this process (idempotent): their products then give
    the same bits on every host, whatever its core count. Never restored: a scorer running on another thread must
    not see it change. The libraries are loaded first (a BLAS loaded after the limit would escape it)."""
    import numpy  # noqa: F401
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_info, threadpool_limits

    with _pin_lock:
        if any(i["user_api"] == "blas" and i["num_threads"] != 1 for i in threadpool_info()):
            _blas_pinned.append(threadpool_limits(limits=1, user_api="blas"))
