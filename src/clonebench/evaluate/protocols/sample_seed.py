"""Per-sample scoring seeds, as rvcbench 2.2.1 sets them before it scores each sample.

Upstream's ``evaluation/pipeline.py`` calls, immediately before scoring a sample that is not cached,
``configure_seeds((seed + int(sample_id[:8], 16)) % (2**32 - 1))`` (policy ``metric_seed_plus_sample_hash_v1``;
``seed`` is the evaluation seed: a suite's ``evaluation.seed``, 42, or the run seed). ``configure_seeds``
(``utils/seeding.py``) seeds Python's ``random``, NumPy's global RNG (``seed % (2**32 - 1)``), sets
``PYTHONHASHSEED`` in the environment, calls ``torch.manual_seed`` (CPU and every CUDA device) and
``torch.cuda.manual_seed_all`` when CUDA is available, and sets ``cudnn.deterministic = True`` and
``cudnn.benchmark = False``. Only Whisper's temperature fallback draws from these RNGs, so the WER scorers wrap each
file in :func:`seeded`.

clonebench's sample ids are sha256 hex digests (``data/identity.py``), the same as upstream's, so the sample hash
is upstream's ``int(sample_id[:8], 16)``. An id whose first 8 characters are not a hexadecimal number (upstream
would raise ``ValueError`` and fail the sample) takes ``int(sha256(id UTF-8)[:8], 16)`` instead: deterministic,
never a crash, and recorded as ``hash_rule`` in the protocol.

:func:`seeded` sets exactly what ``configure_seeds`` sets and afterwards restores the caller's RNG states, cuDNN
flags and ``PYTHONHASHSEED`` (upstream leaves them set; no score depends on it, since every file is re-seeded).
"""

from __future__ import annotations

import hashlib
import os
import random
from contextlib import contextmanager

from clonebench.stats.utterance import SEED_MODULUS

POLICY = "metric_seed_plus_sample_hash_v1"
HASH_RULE = ("int(sample_id[:8], 16) (rvcbench 2.2.1); int(sha256(sample_id)[:8], 16) when sample_id[:8] is not "
             "hexadecimal")


def sample_hash(sample_id: str) -> int:
    try:
        return int(sample_id[:8], 16)  # upstream's rule, with int()'s own parsing (sign, '0x', '_', spaces)
    except ValueError:
        return int(hashlib.sha256(sample_id.encode("utf-8")).hexdigest()[:8], 16)


def scoring_seed(seed: int, sample_id: str) -> int:
    """The seed upstream gives ``configure_seeds`` before scoring ``sample_id``."""
    return (int(seed) + sample_hash(sample_id)) % SEED_MODULUS


@contextmanager
def seeded(value: int, device: str = "cpu"):
    """``configure_seeds(value)`` for the duration of the block; the caller's state is restored after it."""
    import numpy as np
    import torch

    cuda = str(device).startswith("cuda") and torch.cuda.is_available()
    index = torch.device(device).index if cuda else None
    devices = [torch.cuda.current_device() if index is None else index] if cuda else []
    python_state, numpy_state = random.getstate(), np.random.get_state()
    hash_seed = os.environ.get("PYTHONHASHSEED")
    flags = torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark
    try:
        with torch.random.fork_rng(devices=devices):
            random.seed(value)
            np.random.seed(value % SEED_MODULUS)
            os.environ["PYTHONHASHSEED"] = str(value)
            torch.manual_seed(value)
            if torch.cuda.is_available():
                torch.cuda.manual_seed_all(value)
            torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
            yield value
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = flags
        if hash_seed is None:
            os.environ.pop("PYTHONHASHSEED", None)
        else:
            os.environ["PYTHONHASHSEED"] = hash_seed
