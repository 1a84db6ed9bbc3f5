"""SIM and SVA: SpeechBrain ECAPA-TDNN (spkrec-ecapa-voxceleb), target recording vs generated audio.

Exactly ``SpeakerRecognition.verify_files(target, generated)``: each clip is read by SpeechBrain's own loader
steps (``speechbrain.dataio.audio_io.load``: soundfile, float32, frames x channels; then the model's
``audio_normalizer``: torchaudio sinc resampling to 16 kHz, then the channel mean), embedded ALONE (one forward
pass per clip, no padding, ``wav_lens`` = 1, no embedding normalisation), and the two embeddings are compared
with the model's ``similarity`` (cosine, eps 1e-6). SVA = ``score > threshold`` (SpeechBrain's default 0.25).
A clip's embedding therefore never depends on a batch, its neighbours, its order or a cache.
``Pretrained.load_audio`` itself is not called only because it first routes the path through
``speechbrain.utils.fetching.fetch`` (URL / ``::`` handling), which adds nothing for a local file.

On a CPU with the pinned torch, a clip is embedded on ONE torch thread with the convolution kernels ATen selects at
two (evaluate/execution/exact_conv.py): the bits of a two-thread ``verify_files`` (rvcbench's on a 2-core host) at about half
the CPU, whatever the host's core count; the fingerprint records that protocol thread count (``PROTOCOL_THREADS``),
not the one computing, and clips are shared out over one such process per core (evaluate/execution/ecapa_workers.py). On
another torch the rule is unverified: the model runs on torch's own threads, fingerprinted with their count.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import logging

from clonebench.evaluate.execution import exact_conv, overlap
from clonebench.evaluate.protocols.assets import ResolvedAsset, resolve
from clonebench.evaluate.protocols.base import ScoreItem, Scorer, ScoreRecord
from clonebench.evaluate.protocols.locks import ECAPA

log = logging.getLogger(__name__)
PROTOCOL = "verify_files (one clip per forward pass, no padding)"
# the torch thread count whose kernel selection and bits the one-thread exact path reproduces (checked by
# tests/integration/test_exact_conv.py against a two-thread process): what the fingerprint records for it
PROTOCOL_THREADS = 2
_warned: list[str] = []


class EcapaScorer(Scorer):
    name = "ecapa"
    metrics = ("sim", "sva")
    needs_reference = True
    needs_text = False
    uses_gpu = True
    sample_rate = 16_000
    # ECAPA's reflect-padded dilated convolutions need more frames than their padding: below 640 samples at
    # 16 kHz (5 Fbank frames) SpeechBrain raises "Padding size should be less than the corresponding input
    # dimension" (measured). Checked on both the target recording and the generated clip.
    min_duration_s = 0.04

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._model = None
        self._asset: ResolvedAsset | None = None
        self.exact = False  # one-thread embeddings with the multi-thread kernels (evaluate/execution/exact_conv.py)
        self._workers = None

    def version(self) -> str:
        return (f"speechbrain-ecapa {ECAPA.asset_id}@{ECAPA.revision} {PROTOCOL}: speechbrain audio_io.load + "
                f"audio_normalizer (torchaudio Resample to 16 kHz, then channel mean), encode_batch without "
                f"embedding norm, cosine eps 1e-6, sva score > {self.options['threshold']}; v2")

    def protocol(self) -> dict:
        return {"model": ECAPA.asset_id, "revision": ECAPA.revision, "score": PROTOCOL,
                "threshold": self.options["threshold"]}

    def packages(self) -> tuple[str, ...]:
        return ("speechbrain", "torch", "torchaudio", "numpy", "soundfile")

    def assets(self) -> list[dict]:
        return [{**ECAPA.describe(), "source": self._asset.source if self._asset else None}]

    def load(self) -> None:
        from speechbrain.inference.speaker import SpeakerRecognition

        self._asset = resolve(ECAPA, self.options.get("local_dir"), self.options.get("allow_hub", True),
                              self.hash_cache)
        self._savedir = tempfile.mkdtemp(prefix="clonebench-ecapa-")
        directory = str(self._asset.directory)
        self._model = SpeakerRecognition.from_hparams(source=directory, savedir=self._savedir,
                                                      overrides={"pretrained_path": directory},
                                                      run_opts={"device": self.device})
        self._model.eval()
        self._embeddings: dict[str, object] = {}
        if self.device == "cpu":
            reason = exact_conv.unverified_reason()
            if reason is None:
                exact_conv.install(self._model.mods)
                self.exact = True
            elif reason not in _warned:
                _warned.append(reason)
                log.warning("ECAPA one-thread exact path off: %s", reason)

    def computing_threads(self, torch_threads: int) -> int:
        """The thread count whose bits the embeddings are: the protocol's two on the exact path."""
        return PROTOCOL_THREADS if self.exact else torch_threads

    def _workers_for_run(self):
        """The embedding processes (this one and the pool's: evaluate/execution/ecapa_workers.py), made on first use; None
        when embedding stays in this process (not exact, or inside a pool worker)."""
        if self._workers is None and self.exact and not overlap.is_worker():
            from clonebench.evaluate.execution.ecapa_workers import EmbeddingWorkers, processes_for
            from clonebench.evaluate.execution.threads import available_cores

            setting = self.options.get("workers")
            self._workers = EmbeddingWorkers(processes_for(setting, available_cores()), setting is not None,
                                             {k: v for k, v in self.options.items() if k != "workers"},
                                             self.hash_cache.db_path, self.embed, _from_array)
        return self._workers

    def _clips(self, items: list[ScoreItem]) -> list[tuple[str, Path]]:
        """(memo key, path) of every clip ``items`` need, in order (a clip known only by its path: keyed by it)."""
        out = []
        for item in items:
            for path, sha in ((Path(item.target_path), item.target_sha256),
                              (Path(item.generated_path), item.generated_sha256)):
                out.append((sha or f"path:{path}", path))
        return out

    def prepare(self, items: list[ScoreItem]) -> None:
        """Queue the clips of the items about to be scored (in batch order) so that the workers run ahead."""
        from clonebench.evaluate.protocols.validity import too_short

        workers = self._workers_for_run()
        if workers is not None:
            workers.plan(self._clips([i for i in items if too_short(self, i) is None]), self._embeddings)

    def load_clip(self, path: Path):
        """The 16 kHz mono tensor ``Pretrained.load_audio(path)`` returns (on the model's device)."""
        from speechbrain.dataio import audio_io

        signal, rate = audio_io.load(str(path), channels_first=False)
        return self._model.audio_normalizer(signal.to(self._model.device), rate)

    def embed(self, path: Path):
        """One clip's embedding, computed alone (as ``verify_files``: batch of one, relative length 1); on the
        exact path on one thread, or, for a clip longer than ``LONG_CLIP_S`` (embedded alone, never beside
        another), on the protocol's two when torch has them: the same kernels and bytes either way."""
        import torch

        if not self.exact:
            with torch.inference_mode():
                return self._model.encode_batch(self.load_clip(path).unsqueeze(0), None, normalize=False)
        from clonebench.evaluate.execution.ecapa_workers import LONG_CLIP_S

        with exact_conv.torch_threads(1), torch.inference_mode():
            signal = self.load_clip(path)
        alone = signal.shape[-1] > LONG_CLIP_S * self.sample_rate
        with exact_conv.torch_threads(min(PROTOCOL_THREADS, torch.get_num_threads()) if alone else 1), \
                torch.inference_mode():
            return self._model.encode_batch(signal.unsqueeze(0), None, normalize=False)

    def embed_array(self, path: str):
        """``embed`` as a float32 array (what a pool worker returns)."""
        return self.embed(Path(path)).numpy()

    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]:
        import torch

        # by content (sha256): a clip is embedded once for the scorer's life, however many pairs, tasks or runs of
        # one evaluate pass use it (a target shared by several tasks; a derived task's unprocessed clone, the
        # source task's generated clip). An embedding is computed alone, so reusing it changes no bit. A clip known
        # only by its path is embedded once per call.
        embeddings = self._embeddings
        clips = self._clips(items)
        local = [key for key, _ in clips if key.startswith("path:")]
        workers = self._workers_for_run()
        threshold = self.options["threshold"]
        records = []
        try:
            if workers is not None:
                workers.fill(clips, embeddings)
            for item, k in zip(items, range(0, len(clips), 2)):
                for key, path in clips[k:k + 2]:
                    if key not in embeddings:
                        embeddings[key] = self.embed(path)
                target, generated = embeddings[clips[k][0]], embeddings[clips[k + 1][0]]
                with torch.inference_mode():
                    score = float(self._model.similarity(target, generated).reshape(-1)[0].cpu())
                records.append(ScoreRecord(item.sample_id, {"sim": score, "sva": float(score > threshold)}))
        finally:
            for key in local:
                embeddings.pop(key, None)
        return records

    def release(self) -> None:
        self._embeddings = {}
        if self._workers is not None:
            self._workers.close()
            self._workers = None
        super().release()
        import shutil
        shutil.rmtree(getattr(self, "_savedir", ""), ignore_errors=True)


def _from_array(array):
    import torch

    return torch.from_numpy(array)

