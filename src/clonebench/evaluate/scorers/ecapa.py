"""SIM and SVA: SpeechBrain ECAPA-TDNN (spkrec-ecapa-voxceleb), target recording vs generated audio.

As the historical numbers: SIM = the cosine score that ``verify_batch`` computes (embeddings without the
global normalisation, cosine with eps 1e-6), SVA = its accept decision (score > threshold, SpeechBrain's
default 0.25). Embeddings are computed in length-sorted chunks (``embed``).
Audio is read with soundfile, downmixed by the channel mean and resampled to 16 kHz with torchaudio
(the same resampler SpeechBrain's own loader uses); ``verify_files`` itself is not used because it
loads audio through torchaudio.load.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from clonebench.evaluate.assets import ResolvedAsset, release, resolve
from clonebench.evaluate.audio import load_mono
from clonebench.evaluate.base import Scorer, ScoreItem, ScoreRecord
from clonebench.evaluate.locks import ECAPA


MAX_CHUNK_SECONDS_CPU = 8     # padded audio per ECAPA forward pass on a CPU
MAX_CHUNK_SECONDS_GPU = 600


def pad(signals: list, device: str):
    import torch

    longest = max(len(s) for s in signals)
    batch = torch.zeros(len(signals), longest)
    for i, signal in enumerate(signals):
        batch[i, : len(signal)] = torch.from_numpy(signal)
    lengths = torch.tensor([len(s) / longest for s in signals])
    return batch.to(device), lengths.to(device)


class EcapaScorer(Scorer):
    name = "ecapa"
    metrics = ("sim", "sva")
    needs_reference = True
    needs_text = False
    uses_gpu = True
    sample_rate = 16_000

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._model = None
        self._asset: ResolvedAsset | None = None

    def version(self) -> str:
        return (f"speechbrain-ecapa {ECAPA.asset_id}@{ECAPA.revision} verify_batch cosine (no embedding norm), "
                f"sva threshold {self.options['threshold']}, 16 kHz torchaudio resample, channel-mean downmix, v1")

    def protocol(self) -> dict:
        return {"model": ECAPA.asset_id, "revision": ECAPA.revision, "score": "verify_batch cosine",
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

    def embed(self, signals: list) -> list:
        """ECAPA embeddings (no global normalisation, as verify_batch), in length-sorted chunks.

        Signals of similar length go together and a chunk holds at most ``MAX_CHUNK_SECONDS`` of padded
        audio: on a CPU, larger forward passes run slower per second of audio (measured), and sorting keeps
        padding, which shifts scores slightly, small.
        """
        import torch

        budget = (MAX_CHUNK_SECONDS_GPU if self.device.startswith("cuda") else MAX_CHUNK_SECONDS_CPU) * self.sample_rate
        order = sorted(range(len(signals)), key=lambda k: len(signals[k]))
        embeddings: list = [None] * len(signals)
        chunk: list[int] = []

        def flush() -> None:
            wavs, lens = pad([signals[k] for k in chunk], self.device)
            with torch.inference_mode():
                out = self._model.encode_batch(wavs, lens, normalize=False)
            for k, emb in zip(chunk, out):
                embeddings[k] = emb
            chunk.clear()

        for k in order:
            if chunk and (len(chunk) + 1) * len(signals[k]) > budget:
                flush()
            chunk.append(k)
        if chunk:
            flush()
        return embeddings

    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]:
        import torch

        signals = [load_mono(Path(i.target_path), self.sample_rate) for i in items]
        signals += [load_mono(i.generated_path, self.sample_rate) for i in items]
        embeddings = self.embed(signals)
        targets, generated = torch.stack(embeddings[: len(items)]), torch.stack(embeddings[len(items):])
        with torch.inference_mode():
            scores = self._model.similarity(targets, generated).reshape(-1).float().cpu().tolist()
        threshold = self.options["threshold"]
        return [ScoreRecord(i.sample_id, {"sim": float(s), "sva": float(s > threshold)}) for i, s in zip(items, scores)]

    def release(self) -> None:
        super().release()
        if self._asset is not None:
            release(self._asset)
            self._asset = None
        import shutil
        shutil.rmtree(getattr(self, "_savedir", ""), ignore_errors=True)
