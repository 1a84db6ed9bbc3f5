"""WER with openai-whisper (the reproduction protocol: ``medium``, sha256-locked), decoded as rvcbench 2.2.1 does.

One ``model.transcribe(path, ...)`` call per file, exactly upstream's call (``whisper_common``: its options, the
temperature fallback, long-form 30 s windows), with the RNGs seeded as upstream seeds them immediately before it
(``evaluate/protocols/sample_seed.py``). The file is read by ``transcribe`` itself (``whisper.audio.load_audio``: the ffmpeg
CLI, 16 kHz, mono downmix, s16le). fp16 only on CUDA (upstream leaves ``fp16=True``, which openai-whisper turns
off on a CPU). No batching: a batched first pass would round differently from upstream's per-file decode
(fp16 on a GPU especially), and a fallback decode samples from the per-file seeded RNG anyway.
"""

from __future__ import annotations

from pathlib import Path

from clonebench.core.errors import ConfigError
from clonebench.evaluate.protocols.assets import AssetError
from clonebench.evaluate.protocols.base import ScoreItem
from clonebench.evaluate.protocols.locks import OPENAI_WHISPER_SHA256
from clonebench.evaluate.protocols.sample_seed import seeded
from clonebench.evaluate.scorers.whisper_common import Heard, WhisperScorer, identified, weighted, whisper_language


def ffmpeg_version() -> str:
    """The ffmpeg that ``whisper.audio.load_audio`` runs (its resampler decides the samples): first line of -version."""
    import shutil
    import subprocess

    if shutil.which("ffmpeg") is None:
        raise ConfigError("openai-whisper reads audio with the ffmpeg command, which is not on PATH: install it "
                          "(bash scripts/setup.sh, or apt-get install ffmpeg)")
    out = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True, check=True).stdout
    return " ".join(out.splitlines()[0].split()[:3])


class OpenAIWhisperScorer(WhisperScorer):
    name = "whisper"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._model = None
        self._sha256 = None

    def packages(self) -> tuple[str, ...]:
        return ("openai-whisper", "torch", "jiwer", "numpy", "tiktoken")

    backend = "openai_whisper"

    def weights_sha256(self) -> str:
        return self.expected_sha256()

    def precision(self) -> str:
        return "float16" if self.device.startswith("cuda") else "float32"  # transcribe()'s fp16 default on CUDA

    def model_description(self) -> str:
        return (f"openai-whisper {self.options['model']} sha256:{self.expected_sha256()}, audio from "
                f"whisper.audio.load_audio ({ffmpeg_version()})")

    def expected_sha256(self) -> str:
        expected = self.options.get("sha256") or OPENAI_WHISPER_SHA256.get(self.options["model"])
        if not expected:
            raise ConfigError(f"evaluation.whisper.model={self.options['model']}: no sha256 locked for it; set "
                              "evaluation.whisper.sha256=<hex> for the checkpoint you trust")
        return expected

    def assets(self) -> list[dict]:
        return [{"id": f"openai-whisper/{self.options['model']}", "files": {"checkpoint.pt": self.expected_sha256()},
                 "source": self._source if self._model is not None else None}]

    def _checkpoint(self) -> Path:
        local = self.options.get("local_path")
        if local:
            self._source = f"local:{local}"
            return Path(local)
        if not self.options.get("allow_hub", True):
            raise AssetError(f"openai-whisper {self.options['model']}: no evaluation.whisper.local_path and hub "
                             "downloads are off (evaluation.whisper.allow_hub=false)")
        import whisper

        root = Path(self.options.get("download_root") or Path.home() / ".cache" / "whisper")
        url = whisper._MODELS[self.options["model"]]
        self._source = f"hub:{url}"
        return Path(whisper._download(url, str(root), in_memory=False))  # verifies the sha256 in the URL

    def load(self) -> None:
        import whisper

        path = self._checkpoint()
        if not path.is_file():
            raise AssetError(f"openai-whisper checkpoint {path} not found (evaluation.whisper.local_path)")
        digest = self.hash_cache.sha256(path)
        if digest != self.expected_sha256():
            raise AssetError(f"openai-whisper checkpoint {path} has sha256 {digest}, the lock says "
                             f"{self.expected_sha256()}; replace the file or fix evaluation.whisper.sha256")
        self._model = whisper.load_model(str(path), device=self.device)

    def transcribe_batch(self, items: list[ScoreItem]) -> list[Heard]:
        options = self.decoding().openai_kwargs()
        fp16 = self.precision() == "float16"
        heard = []
        for item in items:
            language = whisper_language(item.language)
            extra = {"language": language} if language else {}
            with seeded(self.sample_seed(item), self.device):
                result = self._model.transcribe(str(item.generated_path), fp16=fp16, **options, **extra)
            logprob, no_speech = weighted([(s["avg_logprob"], s["no_speech_prob"], len(s["tokens"]))
                                           for s in result.get("segments", [])])
            heard.append(Heard(result["text"].strip(), logprob, no_speech, *self._identify(item)))
        return heard

    def _identify(self, item: ScoreItem) -> tuple[str, float | None, float | None]:
        """Whisper's language identification on the clip's first 30 s (after the transcription: it draws nothing
        from the seeded RNGs, so the transcript is upstream's whatever it says)."""
        import torch
        import whisper

        if not self._model.is_multilingual:
            return "", None, None
        audio = whisper.pad_or_trim(whisper.load_audio(str(item.generated_path)))
        mel = whisper.log_mel_spectrogram(audio, self._model.dims.n_mels).to(self._model.device)
        with torch.inference_mode():
            _, probs = self._model.detect_language(mel)
        return identified(probs, whisper_language(item.language))
