"""SIM and SVA: SpeechBrain ECAPA-TDNN (spkrec-ecapa-voxceleb), target recording vs generated audio.

Exactly ``SpeakerRecognition.verify_files(target, generated)``: each clip is read by SpeechBrain's own loader
steps (``speechbrain.dataio.audio_io.load``: soundfile, float32, frames x channels; then the model's
``audio_normalizer``: torchaudio sinc resampling to 16 kHz, then the channel mean), embedded ALONE (one forward
pass per clip, no padding, ``wav_lens`` = 1, no embedding normalisation), and the two embeddings are compared
with the model's ``similarity`` (cosine, eps 1e-6). SVA = ``score > threshold`` (SpeechBrain's default 0.25).
A clip's embedding therefore never depends on a batch, its neighbours, its order or a cache.
``Pretrained.load_audio`` itself is not called only because it first routes the path through
``speechbrain.utils.fetching.fetch`` (URL / ``::`` handling), which adds nothing for a local file.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from clonebench.evaluate.assets import ResolvedAsset, resolve
from clonebench.evaluate.base import ScoreItem, Scorer, ScoreRecord
from clonebench.evaluate.locks import ECAPA

PROTOCOL = "verify_files (one clip per forward pass, no padding)"


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

    def load_clip(self, path: Path):
        """The 16 kHz mono tensor ``Pretrained.load_audio(path)`` returns (on the model's device)."""
        from speechbrain.dataio import audio_io

        signal, rate = audio_io.load(str(path), channels_first=False)
        return self._model.audio_normalizer(signal.to(self._model.device), rate)

    def embed(self, path: Path):
        """One clip's embedding, computed alone (as ``verify_files``: batch of one, relative length 1)."""
        import torch

        with torch.inference_mode():
            return self._model.encode_batch(self.load_clip(path).unsqueeze(0), None, normalize=False)

    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]:
        import torch

        # by content (sha256): a clip is embedded once for the scorer's life, however many pairs, tasks or runs of
        # one evaluate pass use it (a target shared by several tasks; a derived task's unprocessed clone, the
        # source task's generated clip). An embedding is computed alone, so reusing it changes no bit.
        embeddings = self._embeddings
        local: dict[str, object] = {}  # a clip known only by its path: once per call

        def embedding(path: Path, sha256: str):
            memo, key = (embeddings, sha256) if sha256 else (local, str(path))
            if key not in memo:
                memo[key] = self.embed(path)
            return memo[key]

        threshold = self.options["threshold"]
        records = []
        for item in items:
            target = embedding(Path(item.target_path), item.target_sha256)
            generated = embedding(item.generated_path, item.generated_sha256)
            with torch.inference_mode():
                score = float(self._model.similarity(target, generated).reshape(-1)[0].cpu())
            records.append(ScoreRecord(item.sample_id, {"sim": score, "sva": float(score > threshold)}))
        return records

    def release(self) -> None:
        self._embeddings = {}
        super().release()
        import shutil
        shutil.rmtree(getattr(self, "_savedir", ""), ignore_errors=True)
