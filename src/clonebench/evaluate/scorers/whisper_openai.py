"""WER with openai-whisper (the reproduction protocol: ``medium``, sha256-locked).

Each clip is read exactly as ``model.transcribe(path)`` reads it: ``whisper.audio.load_audio`` (the ffmpeg
CLI: 16 kHz, mono downmix, s16le). Clips up to 30 s are decoded as one batch (``whisper.decode`` on stacked
log-mel windows, exactly the window, options and silence rule ``transcribe()`` uses for a single-window clip);
longer clips go through ``model.transcribe`` one at a time. fp16 only on CUDA.
"""

from __future__ import annotations

from pathlib import Path

from clonebench.errors import ConfigError
from clonebench.evaluate.assets import AssetError
from clonebench.evaluate.base import ScoreItem
from clonebench.evaluate.locks import OPENAI_WHISPER_SHA256
from clonebench.evaluate.scorers.whisper_common import WhisperScorer, skip_as_silence, whisper_language


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

    def transcribe_batch(self, items: list[ScoreItem]) -> list[str]:
        import torch
        import whisper
        from whisper.audio import N_FRAMES, N_SAMPLES, load_audio
        from whisper.tokenizer import get_tokenizer

        fp16 = self.precision() == "float16"
        dims = self._model.dims
        texts: list[str | None] = [None] * len(items)
        windows, positions, languages = [], [], []
        for index, item in enumerate(items):
            audio = load_audio(str(item.generated_path))  # what transcribe(path) reads
            if len(audio) > N_SAMPLES:
                result = self._model.transcribe(audio, language=whisper_language(item.language), task="transcribe",
                                                temperature=0.0, condition_on_previous_text=False,
                                                without_timestamps=True, fp16=fp16)
                texts[index] = result["text"].strip()
                continue
            mel = whisper.log_mel_spectrogram(audio, dims.n_mels, padding=N_SAMPLES)
            content_frames = mel.shape[-1] - N_FRAMES
            windows.append(whisper.pad_or_trim(mel[:, :content_frames], N_FRAMES))
            positions.append(index)
            languages.append(whisper_language(item.language))
        for language in sorted(set(languages)):  # one decode call per language in the batch
            chosen = [k for k, lang in enumerate(languages) if lang == language]
            batch = torch.stack([windows[k] for k in chosen]).to(self._model.device)
            batch = batch.half() if fp16 else batch
            options = whisper.DecodingOptions(task="transcribe", language=language, temperature=0.0,
                                              without_timestamps=True, fp16=fp16)
            tokenizer = get_tokenizer(self._model.is_multilingual, num_languages=self._model.num_languages,
                                      language=language, task="transcribe")
            with torch.inference_mode():
                results = whisper.decode(self._model, batch, options)
            for k, result in zip(chosen, results):
                silent = skip_as_silence(result.no_speech_prob, result.avg_logprob)
                # as transcribe(): only text tokens (below <|endoftext|>) make up the text
                text = tokenizer.decode([t for t in result.tokens if t < tokenizer.eot])
                texts[positions[k]] = "" if silent else text.strip()
        return [t or "" for t in texts]
