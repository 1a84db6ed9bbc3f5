"""What both Whisper backends share: greedy decoding settings, WER from hypotheses, the version string."""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path

from clonebench.evaluate.base import Scorer, ScoreItem, ScoreRecord
from clonebench.evaluate import transcript

# transcribe() settings of the historical protocol: greedy, no temperature fallback, no conditioning
DECODING = "greedy temperature=0 (no fallback) condition_on_previous_text=False without_timestamps=True"
NO_SPEECH_THRESHOLD, LOGPROB_THRESHOLD = 0.6, -1.0  # transcribe()'s defaults for skipping a silent window


def whisper_language(language: str) -> str:
    """The pair's language as Whisper wants it: lower-case ISO code ('EN' -> 'en', 'en-US' -> 'en')."""
    return language.strip().lower().split("-")[0].split("_")[0]


def skip_as_silence(no_speech_prob: float, avg_logprob: float) -> bool:
    """transcribe()'s rule: a window is dropped when it looks silent and the decoding is unsure."""
    return no_speech_prob > NO_SPEECH_THRESHOLD and not avg_logprob > LOGPROB_THRESHOLD


class WhisperScorer(Scorer):
    metrics = ("wer", "cer")
    needs_reference = False
    needs_text = True
    uses_gpu = True
    sample_rate = 16_000

    @classmethod
    def preflight(cls, options: dict) -> None:
        transcript.check_requirements()  # the pinned Chinese converter and segmenter, before any scoring

    @classmethod
    def source_files(cls) -> list[Path]:
        return [*super().source_files(), Path(__file__), *transcript.source_files()]

    @abstractmethod
    def model_description(self) -> str: ...

    @abstractmethod
    def transcribe_batch(self, items: list[ScoreItem]) -> list[str]: ...

    def protocol(self) -> dict:
        return {"backend": self.backend, "model": self.options["model"], "weights_sha256": self.weights_sha256(),
                "decoding": DECODING, "normalisation": self.options["normalisation"],
                "text": transcript.protocol(self.options["normalisation"])}

    @abstractmethod
    def weights_sha256(self) -> str: ...

    def version(self) -> str:
        return (f"{self.model_description()}; {DECODING}; language from the pair; jiwer per utterance after "
                f"{self.options['normalisation']} ({transcript.VERSION}); v1")

    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]:
        records = []
        for item, hypothesis in zip(items, self.transcribe_batch(items)):
            values = transcript.score_transcript(item.target_text, hypothesis, whisper_language(item.language),
                                                 self.options["normalisation"])
            records.append(ScoreRecord(item.sample_id, values))
        return records
