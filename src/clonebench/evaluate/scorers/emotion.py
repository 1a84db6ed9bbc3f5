"""Emotion match: SpeechBrain ``emotion-recognition-wav2vec2-IEMOCAP`` labels of the target recording and of the
generated clip; ``emotion_match`` = 1 when the labels agree (the paper's Emo column is its mean).

As upstream (RVCBench's native emotion scorer): the model at revision ``117a9c3d…`` with its five files
sha256-locked, loaded through its own ``custom_interface.py`` (``CustomEncoderWav2vec2Classifier``) with
``foreign_class`` and network fetching off, ``overrides={"pretrained_path": <verified folder>, "wav2vec2_hub":
<facebook/wav2vec2-base folder>}``; each clip is read, downmixed by the channel mean, resampled to 16 kHz and
classified alone with ``classify_batch``; labels must be one of neu, ang, hap, sad.

Sources: ``evaluation.emotion.local_dir`` (the five locked files) and ``evaluation.emotion.base_dir`` (the
``facebook/wav2vec2-base`` folder the hyperparameters initialise the encoder from, before ``wav2vec2.ckpt``
replaces its weights; hashed into the provenance, not locked, as upstream), else the hub at the pinned
revisions when ``allow_hub``. Status: **unverified** (the real weights were never run here; see docs/scoring.md).
"""

from __future__ import annotations

import inspect
import tempfile
from pathlib import Path

from clonebench.evaluate.protocols.assets import Asset, AssetError, ResolvedAsset, resolve
from clonebench.evaluate.protocols.audio import resample_mono_torchaudio
from clonebench.evaluate.protocols.base import ScoreItem, Scorer, ScoreRecord

EMOTION = Asset(
    asset_id="speechbrain/emotion-recognition-wav2vec2-IEMOCAP",
    revision="117a9c3dff08be81a3628eecf6a66b547ec1659b",
    lock={
        "custom_interface.py": "b3b2060058f220e40c582f91da38cee416b3ce80a365f7dee46063a04ed180d7",
        "hyperparams.yaml": "4519de8fee8fef69ae5aeb8d2d307fa45a5d1795f0597b06e42aebbd96597237",
        "label_encoder.txt": "30afecda60619b67b50375bac880df4edc3862c14fb724c86701200b13e080ca",
        "wav2vec2.ckpt": "b6db170a487b2912cfe10359fad40dbb7563120656f26f47c521b1c7e578bdd0",
        "model.ckpt": "e351bafc8c0a2699f174e2f43f13e732836731621a8e595b53ddaf5334abcefb",
    },
)
BASE_ID, BASE_REVISION = "facebook/wav2vec2-base", "0b5b8e868dd84f03fd87d01f9c4ff0f080fecfe8"
BASE_FILES = ("config.json", "preprocessor_config.json", "pytorch_model.bin")
LABELS = ("neu", "ang", "hap", "sad")
RATE = 16_000


class EmotionScorer(Scorer):
    name = "emotion"
    metrics = ("emotion_match", "emotion_target", "emotion_generated")
    needs_reference = True
    needs_text = False
    uses_gpu = True
    sample_rate = RATE
    verified = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._model = None
        self._asset: ResolvedAsset | None = None
        self._base: dict[str, str] = {}
        self._base_source: str | None = None

    def packages(self) -> tuple[str, ...]:
        return ("speechbrain", "torch", "torchaudio", "transformers", "numpy", "soundfile")

    def version(self) -> str:
        return (f"speechbrain emotion {EMOTION.asset_id}@{EMOTION.revision} CustomEncoderWav2vec2Classifier "
                f"classify_batch, labels {'/'.join(LABELS)}, match = label(target) == label(generated), "
                f"torchaudio resample to {RATE} Hz per channel, then channel mean (upstream RVCBench loading), one clip per call; v2 (unverified)")

    def protocol(self) -> dict:
        return {"model": EMOTION.asset_id, "revision": EMOTION.revision, "score": "label(target) == label(generated)"}

    def assets(self) -> list[dict]:
        return [{**EMOTION.describe(), "source": self._asset.source if self._asset else None, "verified_scorer": False},
                {"id": BASE_ID, "revision": BASE_REVISION, "files": self._base, "source": self._base_source,
                 "locked": False}]

    def _base_dir(self) -> Path:
        base = self.options.get("base_dir")
        if base is not None:
            base = Path(base)
            self._base_source = f"local:{base}"
        elif self.options.get("allow_hub", True):
            from huggingface_hub import snapshot_download

            try:
                base = Path(snapshot_download(BASE_ID, revision=BASE_REVISION, allow_patterns=list(BASE_FILES)))
            except Exception as exc:  # offline, no such revision: the assets were not given
                raise AssetError(f"{BASE_ID}@{BASE_REVISION} could not be fetched ({type(exc).__name__}); give "
                                 "evaluation.emotion.base_dir") from exc
            self._base_source = f"hub:{BASE_ID}@{BASE_REVISION}"
        else:
            raise AssetError(f"{BASE_ID}: no evaluation.emotion.base_dir and allow_hub is false; give the folder "
                             f"holding {list(BASE_FILES)} ({BASE_ID}@{BASE_REVISION})")
        if not base.is_dir():
            raise AssetError(f"evaluation.emotion.base_dir={base}: not a folder")
        self._base = {p.name: self.hash_cache.sha256(p) for p in sorted(base.iterdir()) if p.is_file()}
        return base

    def load(self) -> None:
        from speechbrain.inference.interfaces import foreign_class
        from speechbrain.utils.fetching import FetchConfig

        self._asset = resolve(EMOTION, self.options.get("local_dir"), self.options.get("allow_hub", True),
                              self.hash_cache)
        base = self._base_dir()
        folder = self._asset.directory
        self._savedir = tempfile.mkdtemp(prefix="clonebench-emotion-")
        self._model = foreign_class(source=str(folder), pymodule_file="custom_interface.py",
                                    classname="CustomEncoderWav2vec2Classifier", savedir=self._savedir,
                                    overrides={"pretrained_path": str(folder), "wav2vec2_hub": str(base)},
                                    run_opts={"device": self.device}, fetch_config=FetchConfig(allow_network=False))
        interface = Path(inspect.getfile(type(self._model).classify_batch))
        if self.hash_cache.sha256(interface) != EMOTION.lock["custom_interface.py"]:
            raise AssetError(f"{EMOTION.asset_id}: the classifier was imported from {interface}, whose sha256 is not "
                             "the locked custom_interface.py's")
        self._model.hparams.label_encoder.expect_len(len(LABELS))

    def _label(self, path: Path) -> str:
        import torch

        wave = resample_mono_torchaudio(path, RATE).unsqueeze(0).to(self.device)
        if wave.numel() == 0:
            raise ValueError(f"{path}: empty audio")
        with torch.inference_mode():
            _, _, _, labels = self._model.classify_batch(wave)
        if len(labels) != 1 or labels[0] not in LABELS:
            raise ValueError(f"{path}: the classifier returned {labels!r}, expected one of {LABELS}")
        return str(labels[0])

    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]:
        records = []
        for item in items:
            if item.target_path is None:
                records.append(ScoreRecord(item.sample_id, error="no target recording to compare emotions with"))
                continue
            target, generated = self._label(item.target_path), self._label(item.generated_path)
            records.append(ScoreRecord(item.sample_id, {"emotion_match": float(target == generated),
                                                        "emotion_target": target, "emotion_generated": generated}))
        return records
