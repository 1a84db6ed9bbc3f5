"""WER with faster-whisper (CTranslate2): any converted Whisper folder (base / tiny.en carried by wheels,
large-v3 for users), with the decoding options of rvcbench's openai-whisper call (``whisper_common``) and
faster-whisper's own temperature fallback.

Each clip is read exactly as ``WhisperModel.transcribe(path)`` reads it: ``faster_whisper.audio.decode_audio``
(PyAV: s16 mono at the feature extractor's 16 kHz). Clips up to 30 s first go through one batched pass at
temperature 0: each clip's single window is encoded (batched on a GPU, one by one on a CPU), then all are greedily
decoded in one ``generate`` call with the prompt, options and silence rule that ``transcribe`` uses for a
one-window clip. A clip whose greedy result ``transcribe`` would accept (faster-whisper's own rule:
``generate_with_fallback``) keeps it; any other clip (one that falls back), a longer clip or one whose language must
be detected is decoded by ``transcribe`` itself.

Seeds: CTranslate2 samples from a per-thread generator seeded from ``ctranslate2.set_random_seed`` only the first
time a worker thread samples, so re-seeding a loaded model does nothing (measured: the same seed gave other
hypotheses on a second call). A clip that can sample (the fallback decoding) is therefore transcribed by a fresh
copy of the model (a new worker thread) right after ``set_random_seed(<the sample's seed>)``: its fallback is then
a function of the clip and its sample id (about a second of loading per such clip on a CPU).
"""

from __future__ import annotations

from pathlib import Path

from clonebench.core.errors import ConfigError
from clonebench.evaluate.protocols.assets import ResolvedAsset, resolve
from clonebench.evaluate.protocols.base import ScoreItem
from clonebench.evaluate.protocols.locks import FASTER_WHISPER
from clonebench.evaluate.protocols.sample_seed import seeded
from clonebench.evaluate.scorers.whisper_common import Heard, WhisperScorer, identified, weighted, whisper_language


class FasterWhisperScorer(WhisperScorer):
    name = "whisper"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._model = None
        self._asset: ResolvedAsset | None = None
        self._local_hashes: dict[str, str] = {}

    def packages(self) -> tuple[str, ...]:
        cuda = ("nvidia-cublas-cu12",) if self.device.startswith("cuda") else ()  # the cuBLAS it runs on
        return ("faster-whisper", "ctranslate2", "av", "jiwer", "numpy", *cuda)

    def compute_type(self) -> str:
        chosen = self.options.get("compute_type") or "auto"
        if chosen == "auto":
            return "float16" if self.device.startswith("cuda") else "float32"
        return chosen

    backend = "faster_whisper"

    def precision(self) -> str:
        """The compute type CTranslate2 actually uses (it may substitute one the device lacks)."""
        return self._model.model.compute_type if self._model is not None else self.compute_type()

    def execution_facts(self) -> dict:
        from clonebench.evaluate.execution.precision import ctranslate2_env

        return {"compute_type": self.precision(), "ctranslate2_env": ctranslate2_env()}

    def weights_sha256(self) -> str:
        asset = FASTER_WHISPER.get(self.options["model"])
        return asset.lock["model.bin"] if asset else self._local_hashes.get("model.bin", "unlocked-local")

    def model_description(self) -> str:
        name = self.options["model"]
        digest = self.weights_sha256()
        return (f"faster-whisper {name} model.bin sha256:{digest} compute_type={self.compute_type()}, audio from "
                "faster_whisper.audio.decode_audio")

    def assets(self) -> list[dict]:
        asset = FASTER_WHISPER.get(self.options["model"])
        described = asset.describe() if asset else {"id": self.options["model"], "files": self._local_hashes}
        return [{**described, "source": self._asset.source if self._asset else self.options.get("local_path")}]

    def load(self) -> None:
        if self.device.startswith("cuda"):  # CTranslate2 4.x needs CUDA 12's cuBLAS: load it before it looks
            from clonebench.evaluate.execution.cuda_env import preload_cublas12

            try:
                preload_cublas12()
            except OSError as exc:
                raise ConfigError(str(exc)) from None
        from faster_whisper import WhisperModel

        name = self.options["model"]
        asset = FASTER_WHISPER.get(name)
        if asset is not None:
            self._asset = resolve(asset, self.options.get("local_path"), self.options.get("allow_hub", True),
                                  self.hash_cache)
            folder = self._asset.directory
        else:  # any other CTranslate2 folder (e.g. large-v3): hashed and recorded, not locked
            if not self.options.get("local_path"):
                raise ConfigError(f"evaluation.whisper.model={name} has no lock; give evaluation.whisper.local_path "
                                  "(a CTranslate2 Whisper folder); its file hashes are recorded")
            folder = Path(self.options["local_path"])
            self._local_hashes = {p.name: self.hash_cache.sha256(p) for p in sorted(folder.iterdir()) if p.is_file()}
        import torch

        device, _, index = self.device.partition(":")
        self._model_args = {"model_size_or_path": str(folder), "device": device, "device_index": int(index or 0),
                            "compute_type": self.compute_type(), "cpu_threads": torch.get_num_threads()}
        self._model = WhisperModel(**self._model_args)

    def transcribe_batch(self, items: list[ScoreItem]) -> list[Heard]:
        from faster_whisper.audio import decode_audio, pad_or_trim

        model = self._model
        extractor = model.feature_extractor
        texts: list[Heard | None] = [None] * len(items)
        windows: dict[str, list[tuple[int, object]]] = {}
        audios = {}
        for index, item in enumerate(items):
            audio = decode_audio(str(item.generated_path), sampling_rate=extractor.sampling_rate)
            language = whisper_language(item.language) if model.model.is_multilingual else "en"
            features = extractor(audio)
            content_frames = features.shape[-1] - 1
            if content_frames > extractor.nb_max_frames or language is None:
                texts[index] = self._transcribe(audio, language, item)
                continue
            audios[index] = audio
            windows.setdefault(language, []).append((index, pad_or_trim(features[:, :content_frames]),
                                                     content_frames))
        for language, chosen in windows.items():
            indices = [i for i, _, _ in chosen]
            greedy = self._greedy_pass(language, [w for _, w, _ in chosen], [items[i] for i in indices],
                                       [n for _, _, n in chosen])
            for index, heard in zip(indices, greedy):
                texts[index] = heard if heard is not None else self._transcribe(audios[index], language, items[index])
        return [t or Heard("") for t in texts]

    def _text_logprobs(self, encoded, items: list[ScoreItem], frames: list[int], language: str | None) -> list:
        """The mean log-probability per token of each item's target text, teacher-forced on its encoded window
        (CTranslate2's ``align``: one decoder pass over the given tokens), the text prefixed with a space as
        Whisper writes it after the start tokens. Tokens by openai-whisper's tiktoken tokenizer, Whisper's own:
        the tokenizer.json of these folders, read by tokenizers 0.23, splits " the" into " " + "the" (measured),
        tokens the model never saw in that place. None without a language or a text."""
        import numpy as np
        from whisper.tokenizer import get_tokenizer

        multilingual = self._model.model.is_multilingual
        if language is None or not items:
            return [None] * len(items)
        tokenizer = get_tokenizer(multilingual, num_languages=self._model.model.num_languages,
                                  language=language if multilingual else None, task="transcribe")
        tokens = [tokenizer.encode(" " + " ".join(str(item.target_text or "").split())) for item in items]
        wanted = [i for i, t in enumerate(tokens) if t]
        out: list[float | None] = [None] * len(items)
        if not wanted:
            return out
        if len(wanted) < len(items):
            import ctranslate2

            encoded = ctranslate2.StorageView.from_array(np.ascontiguousarray(np.asarray(encoded)[wanted]))
        results = self._model.model.align(encoded, list(tokenizer.sot_sequence_including_notimestamps),
                                          [tokens[i] for i in wanted], [frames[i] for i in wanted])
        for i, result in zip(wanted, results):
            probs = np.asarray(result.text_token_probs[:len(tokens[i])], dtype=np.float64)
            out[i] = float(np.mean(np.log(np.maximum(probs, 1e-30))))
        return out

    def _identified(self, encoded, language: str) -> list[tuple[str, float | None, float | None]]:
        """Language identification of each encoded window (CTranslate2's ``detect_language``: one decoder step)."""
        if not self._model.model.is_multilingual:
            return [("", None, None)] * encoded.shape[0]
        return [identified({token[2:-2]: p for token, p in probs}, language)
                for probs in self._model.model.detect_language(encoded)]

    def _greedy_pass(self, language: str, windows: list, items: list[ScoreItem], frames: list[int]) \
            -> list[Heard | None]:
        """The temperature-0 decode of one-window clips, batched: each text as ``transcribe`` would return it, or
        None where ``transcribe`` would go on to the next temperature."""
        from faster_whisper.tokenizer import Tokenizer
        from faster_whisper.transcribe import (
            get_compression_ratio,
            get_suppressed_tokens,
        )

        model, decoding = self._model, self.decoding()
        tokenizer = Tokenizer(model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language=language)
        prompt = model.get_prompt(tokenizer, [], without_timestamps=True)
        encoded = self._encode(windows)
        results = model.model.generate(
            encoded, [list(prompt) for _ in windows], beam_size=1, patience=1, length_penalty=1,
            repetition_penalty=1, no_repeat_ngram_size=0, max_length=model.max_length, return_scores=True,
            return_no_speech_prob=True, suppress_blank=True, suppress_tokens=get_suppressed_tokens(tokenizer, [-1]),
            max_initial_timestamp_index=int(round(1.0 / model.time_precision)))
        texts: list[Heard | None] = []
        forced = self._text_logprobs(encoded, items, frames, language)
        for result, found, text_logprob in zip(results, self._identified(encoded, language), forced):
            tokens = result.sequences_ids[0]
            avg_logprob = result.scores[0] * len(tokens) / (len(tokens) + 1)
            text = tokenizer.decode(tokens).strip()
            low = avg_logprob < decoding.logprob_threshold
            silent = result.no_speech_prob > decoding.no_speech_threshold
            # generate_with_fallback: too repetitive or too unsure falls back, unless it is silence
            falls_back = (get_compression_ratio(text) > decoding.compression_ratio_threshold or low) \
                and not (silent and low)
            if falls_back and decoding.falls_back:
                texts.append(None)
            elif silent and not avg_logprob > decoding.logprob_threshold:  # generate_segments skips the window
                texts.append(Heard("", None, None, *found, text_logprob))
            else:
                texts.append(Heard(text, avg_logprob, result.no_speech_prob, *found, text_logprob))
        return texts

    def _transcribe(self, audio, language: str | None, item: ScoreItem) -> Heard:
        """``WhisperModel.transcribe`` with the protocol's options; a decoding that can sample runs on a fresh copy
        of the model seeded with the sample's seed (see the module docstring)."""
        import copy

        import ctranslate2
        from faster_whisper import WhisperModel

        options = {**self.decoding().faster_kwargs(), **({"language": language} if language else {})}
        model = self._model
        value = self.sample_seed(item)
        with seeded(value, self.device):
            if self.decoding().falls_back:
                model = copy.copy(self._model)
                ctranslate2.set_random_seed(value)
                model.model = WhisperModel(**self._model_args).model
            segments = list(model.transcribe(audio, **options)[0])
        logprob, no_speech = weighted([(s.avg_logprob, s.no_speech_prob, len(s.tokens)) for s in segments])
        found: tuple[str, float | None, float | None] = ("", None, None)
        if self._model.model.is_multilingual:
            found = identified(dict(self._model.detect_language(audio)[2]), language)
        return Heard("".join(s.text for s in segments).strip(), logprob, no_speech, *found,
                     self._one_text_logprob(audio, language, item))

    def _one_text_logprob(self, audio, language: str | None, item: ScoreItem) -> float | None:
        """``_text_logprobs`` of one clip decoded by ``transcribe``: None past one 30 s window."""
        from faster_whisper.audio import pad_or_trim

        extractor = self._model.feature_extractor
        features = extractor(audio)
        frames = features.shape[-1] - 1
        if frames > extractor.nb_max_frames:
            return None
        encoded = self._encode([pad_or_trim(features[:, :frames])])
        return self._text_logprobs(encoded, [item], [frames], language)[0]

    def _encode(self, windows: list):
        """Encoder output for a batch of windows. On a CPU the encoder runs one window at a time and only the
        decoder is batched: CTranslate2's batched encoder is slower there than a loop (measured)."""
        import ctranslate2
        import numpy as np

        if self.device.startswith("cuda") or len(windows) == 1:
            return self._model.encode(np.stack(windows))
        outputs = [np.asarray(self._model.encode(window[None])) for window in windows]
        return ctranslate2.StorageView.from_array(np.ascontiguousarray(np.concatenate(outputs)))
