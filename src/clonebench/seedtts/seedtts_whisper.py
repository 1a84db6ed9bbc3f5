"""Seed-TTS-eval's English WER (``seed_wer_en``): ``openai/whisper-large-v3`` through transformers, scored with the
benchmark's own text rule (``seedtts/text.py``).

The benchmark (BytedanceSpeech/seed-tts-eval ``run_wer.py``, ``lang=en``), one file at a time:

- ``soundfile.read(path)`` (float64); when the rate is not 16 kHz, ``scipy.signal.resample(wav,
  int(len(wav) * 16000 / sr))`` (FFT resampling of the whole clip);
- ``WhisperProcessor(wav, sampling_rate=16000, return_tensors="pt").input_features`` (log-mel of the first 30 s:
  the feature extractor pads or cuts to 30 s, so a longer clip is scored on its first 30 s, as upstream);
- ``WhisperForConditionalGeneration.generate(features, forced_decoder_ids=get_decoder_prompt_ids(
  language="english", task="transcribe"))`` with the checkpoint's generation config (greedy), then
  ``batch_decode(..., skip_special_tokens=True)[0]``, kept as it comes (no strip);
- ``process_one(transcript, reference)``; the set's WER is the mean of the per-utterance WERs.

Differences forced by the installed versions, none of which changes a token:

- transformers 5 no longer accepts ``forced_decoder_ids`` in ``generate``; the same decoder prompt
  (``<|startoftranscript|><|en|><|transcribe|><|notimestamps|>``) is asked with ``language="english",
  task="transcribe"`` (transformers 4 turned the forced ids into exactly these initial tokens);
- transformers 5 loads a checkpoint in its stored dtype by default (float16 for large-v3); upstream's
  transformers 4 loaded it in float32, so ``dtype=torch.float32`` is passed.

A stereo file is a per-sample error (upstream would hand a 2-D array to the feature extractor); so is a pair whose
language is not English (``seed_wer_zh`` scores Chinese pairs with Paraformer), and a reference that the text rule
leaves empty (upstream's jiwer 3 refuses it).

Weights: ``evaluation.seedtts.whisper_local_path`` (a transformers folder: config.json, generation_config.json,
model.safetensors, the tokenizer and preprocessor files), else the hub repository at the pinned revision when hub
downloads are allowed. ``model.safetensors`` must match the sha256 lock (or ``sha256`` given in the options for
another checkpoint); the other files' hashes are recorded in ``assets()``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from clonebench.core.errors import DependencyError
from clonebench.evaluate.protocols.assets import AssetError
from clonebench.evaluate.protocols.base import ScoreItem, Scorer, ScoreRecord
from clonebench.seedtts.text import rule_protocol, score_items, with_text_rule

MODEL_ID = "openai/whisper-large-v3"
# the hub commit of openai/whisper-large-v3 that the lock was read at, and the sha256 of its model.safetensors
# (3.09 GB, float16; its Git LFS pointer's oid, the same in every copy of the repository's weights)
MODEL_REVISION = "06f233fe06e710322aca913c1bc4249a0d71fce1"
MODEL_SAFETENSORS_SHA256 = "a8e94b85976e5864ba3e9525c7e6c83b2a1eca42d4b797a0c7c24d778e40fd95"
WEIGHTS = "model.safetensors"
# the files transformers reads from a Whisper folder (those present are hashed into assets())
FOLDER_FILES = ("config.json", "generation_config.json", WEIGHTS, "preprocessor_config.json", "processor_config.json",
                "tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "added_tokens.json",
                "special_tokens_map.json", "normalizer.json")
RATE = 16_000
INSTALL = "pip install 'transformers>=5' 'zhon==2.1.1'"


class SeedTTSWhisperScorer(Scorer):
    name = "seedtts_whisper"
    metrics = ("seed_wer_en",)
    needs_reference = False
    needs_text = True
    uses_gpu = True
    sample_rate = RATE

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._model = None
        self._model_processor = None
        self._source: str | None = None
        self._files: dict[str, str] = {}

    @classmethod
    def preflight(cls, options: dict[str, Any]) -> None:
        missing = [name for name in ("transformers", "zhon", "jiwer", "scipy") if importlib.util.find_spec(name) is None]
        if missing:
            raise DependencyError(f"seed_wer_en (Seed-TTS-eval's Whisper large-v3 WER) needs {missing}: {INSTALL}")
        if not options.get("local_path") and not options.get("allow_hub", False):
            raise AssetError(f"seed_wer_en: give evaluation.seedtts.whisper_local_path (a transformers copy of "
                             f"{MODEL_ID} at revision {MODEL_REVISION}) or set evaluation.seedtts.whisper_allow_hub=true")

    def packages(self) -> tuple[str, ...]:
        return ("transformers", "tokenizers", "safetensors", "torch", "jiwer", "zhon", "numpy", "scipy", "soundfile")

    def lock(self) -> str:
        sha = self.options.get("sha256") or MODEL_SAFETENSORS_SHA256
        if not sha:
            raise AssetError(f"{MODEL_ID} {WEIGHTS}: no sha256 lock; give evaluation.seedtts.whisper_sha256")
        return str(sha).lower()

    @classmethod
    def source_files(cls) -> list[Path]:
        return with_text_rule(super().source_files())

    def version(self) -> str:
        return (f"Seed-TTS-eval en WER: transformers WhisperForConditionalGeneration {MODEL_ID}@{MODEL_REVISION[:12]} "
                f"{WEIGHTS} sha256:{self.lock()[:16]} in float32, soundfile + scipy.signal.resample to 16 kHz, "
                "generate(language=english, task=transcribe) greedy, first 30 s, seedtts_process_one_v1 text rule; v1")

    def protocol(self) -> dict[str, Any]:
        return {"asr": MODEL_ID, "revision": MODEL_REVISION, "weights_sha256": self.lock(), "language": "en",
                "decoding": "greedy, <|en|><|transcribe|><|notimestamps|>", "audio": "soundfile+scipy.signal.resample",
                **rule_protocol()}

    def assets(self) -> list[dict]:
        files = dict(self._files) or {WEIGHTS: self.lock()}
        return [{"id": MODEL_ID, "revision": MODEL_REVISION, "files": files, "source": self._source}]

    def _folder(self) -> Path:
        local = self.options.get("local_path")
        if local:
            self._source = f"local:{local}"
            folder = Path(local)
            if not (folder / WEIGHTS).is_file():
                raise AssetError(f"{MODEL_ID}: {folder} has no {WEIGHTS} (evaluation.seedtts.whisper_local_path must "
                                 "be a transformers Whisper folder saved with safetensors)")
            return folder
        if not self.options.get("allow_hub", False):
            raise AssetError(f"{MODEL_ID}: no evaluation.seedtts.whisper_local_path and hub downloads are off; give a "
                             f"local copy of {MODEL_ID} at revision {MODEL_REVISION}")
        from huggingface_hub import snapshot_download

        self._source = f"hub:{MODEL_ID}@{MODEL_REVISION}"
        return Path(snapshot_download(MODEL_ID, revision=MODEL_REVISION, allow_patterns=list(FOLDER_FILES)))

    def load(self) -> None:
        import torch
        from transformers import WhisperForConditionalGeneration, WhisperProcessor

        folder = self._folder()
        files = {name: self.hash_cache.sha256(folder / name) for name in FOLDER_FILES if (folder / name).is_file()}
        if files[WEIGHTS] != self.lock():
            raise AssetError(f"{MODEL_ID}: {folder / WEIGHTS} has sha256 {files[WEIGHTS]}, the lock says {self.lock()}; "
                             "replace the folder or give evaluation.seedtts.whisper_sha256 for the checkpoint you trust")
        self._files = files
        self._model_processor = WhisperProcessor.from_pretrained(str(folder), local_files_only=True)
        model = WhisperForConditionalGeneration.from_pretrained(str(folder), local_files_only=True,
                                                                use_safetensors=True, dtype=torch.float32)
        self._model = model.to(self.device).eval()

    def transcribe(self, path: Path) -> str:
        """The benchmark's English transcription of one file."""
        import numpy as np
        import scipy.signal
        import soundfile as sf
        import torch

        wav, sr = sf.read(str(path))
        if np.ndim(wav) != 1:
            raise ValueError(f"{path.name}: {wav.shape[1]} channels; Seed-TTS-eval's WER reads mono files")
        if sr != RATE:
            wav = scipy.signal.resample(wav, int(len(wav) * RATE / sr))
        features = self._model_processor(wav, sampling_rate=RATE, return_tensors="pt").input_features
        with torch.inference_mode():
            ids = self._model.generate(features.to(self.device), language="english", task="transcribe")
        return self._model_processor.batch_decode(ids, skip_special_tokens=True)[0]

    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]:
        return score_items(items, "en", self.transcribe, ScoreRecord)
