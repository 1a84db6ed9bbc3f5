"""Failure modes (``fail``): per clip, what ``clonebench.failures`` measures on the audio (speech by Silero VAD,
the spoken span against the duration the text needs, repeated audio, clipping, likeness to the pair's prompt).

The record holds the measurements (``fm_*``) and ``fail``, the verdict of the audio flags alone. The evaluate phase
then adds the flags that read the Whisper group's values of the same clip (repeated n-grams, babble, the wrong
language: ``failures.flags.finalise``), which is why asking for ``fail`` scores the Whisper group too
(``registry.ALSO_NEEDS``). Thresholds, VAD settings and the rule's version are the protocol (its fingerprint).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from clonebench.evaluate.protocols.base import ScoreItem, Scorer, ScoreRecord


def _read(path: Path) -> tuple[np.ndarray, int]:
    import soundfile as sf

    samples, rate = sf.read(str(path), dtype="float32", always_2d=True)
    return samples, rate


class FailureScorer(Scorer):
    name = "failures"
    metrics = ("fail",)
    needs_reference = False
    needs_text = True
    needs_prompt = True
    uses_gpu = False
    sample_rate = 16_000
    cpu_bound = True  # may be scored in the CPU pool
    scores_silence = True  # an empty or silent clip is what its "silent" flag is for
    # the VAD is an onnxruntime session of one thread, the features numpy/librosa with BLAS pinned to one
    # thread (evaluate/execution/threads.py): the same numbers at every torch thread count
    threads_change_numbers = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._model = None
        self._prompts: dict[str, tuple] = {}

    def packages(self) -> tuple[str, ...]:
        return ("silero-vad", "onnxruntime", "torch", "librosa", "scipy", "numpy", "soundfile")

    def version(self) -> str:
        from clonebench.failures import thresholds

        return f"clonebench {thresholds.VERSION}: Silero VAD speech, time-warped MFCC self-similarity, duration " \
               "from the prompt's characters per second, clipping share, prompt correlation; ASR flags from the " \
               "Whisper group (transcript against the text, the text's teacher-forced log-probability, language ID)"

    def protocol(self) -> dict:
        from clonebench.failures import thresholds, vad

        return {**thresholds.protocol(), "vad": vad.protocol()}

    def assets(self) -> list[dict]:
        from clonebench.failures import vad

        return [{"id": f"silero-vad/{vad.PACKAGE_VERSION}", "files": {vad.MODEL_FILE: vad.MODEL_SHA256},
                 "source": "wheel"}]

    @classmethod
    def source_files(cls) -> list[Path]:
        from clonebench.failures import copy, flags, loops, measure, text, thresholds, vad

        return [*super().source_files(),
                *(Path(m.__file__) for m in (copy, flags, loops, measure, text, thresholds, vad))]

    def load(self) -> None:
        from clonebench.failures.vad import SileroVad

        self._model = SileroVad(self.hash_cache)

    def release(self) -> None:
        self._prompts = {}
        super().release()

    def _mono_16k(self, samples: np.ndarray, rate: int) -> np.ndarray:
        from clonebench.failures.copy import at_16k

        return at_16k(samples, rate).astype(np.float32)

    def _prompt(self, item: ScoreItem):
        """(samples, rate, speech, syllable rate) of the item's prompt, once per prompt; None without a prompt."""
        if item.prompt_path is None or not Path(item.prompt_path).is_file():
            return None
        if item.prompt_sha256 not in self._prompts:
            from clonebench.core.records import MAX_AUDIO_REF_BYTES
            from clonebench.core.untrusted import read_bytes
            from clonebench.data.audio import read_input_audio
            from clonebench.failures.measure import syllable_rate

            # an input clip of the dataset: a bounded regular file, as the generate phase reads it (AudioRef)
            data = read_bytes(item.prompt_path, max_bytes=MAX_AUDIO_REF_BYTES, what="prompt audio")
            info, samples = read_input_audio(data)
            mono = self._mono_16k(samples, info.sample_rate)
            speech = self._model.speech(mono)
            self._prompts[item.prompt_sha256] = (samples, info.sample_rate, speech, syllable_rate(mono, speech))
        return self._prompts[item.prompt_sha256]

    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]:
        from clonebench.failures.flags import audio_flags
        from clonebench.failures.measure import expected_duration, measure

        records = []
        for item in items:
            samples, rate = _read(Path(item.generated_path))
            mono = self._mono_16k(samples, rate)
            speech = self._model.speech(mono)
            prompt = self._prompt(item)
            expected = expected_duration(item.target_text, item.language, item.prompt_text, item.prompt_language,
                                         prompt[2] if prompt else None)
            measured = measure(samples, rate, speech, mono, expected, prompt[:2] if prompt else None,
                               prompt_syllable_rate=prompt[3] if prompt else None)
            values = measured.values()
            if prompt is not None and item.prompt_sha256 and item.prompt_sha256 == item.generated_sha256:
                values["fm_prompt_corr"] = 1.0  # the prompt file itself
            values["fail"] = 1.0 if audio_flags(values) else 0.0
            records.append(ScoreRecord(item.sample_id, values))
        return records
