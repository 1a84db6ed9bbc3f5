"""What both Whisper backends share: the decoding protocol, per-sample seeds, WER from hypotheses, the version.

The default decoding (``fallback_v1``) is rvcbench 2.2.1's (``evaluation/scorers/wer.py``): openai-whisper's
``model.transcribe(path, task="transcribe", condition_on_previous_text=False, without_timestamps=True,
language=<lower-cased hint>)`` with every other option at transcribe()'s default, i.e. the temperature fallback
0.0, 0.2, ... 1.0 (a window is decoded again at the next temperature when its compression ratio is > 2.4 or its
average log-probability < -1.0; it is skipped as silence when no-speech > 0.6 and the log-probability is not
above -1.0), greedy at temperature 0 and one sample per higher temperature, long clips in 30 s windows, fp16 on
CUDA only. Before each file the RNGs are seeded as upstream seeds them (``evaluate/protocols/sample_seed.py``), so the
sampled fallback is a function of the file, the text, the language and the sample id only.

``greedy_v1`` (temperature 0 only, no fallback) is the protocol clonebench used before: a named, non-default
protocol whose fingerprint differs, so ``clonebench compare-check`` refuses to compare it with the default.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from pathlib import Path

from clonebench.evaluate.protocols import sample_seed, transcript
from clonebench.evaluate.protocols.base import ScoreItem, Scorer, ScoreRecord

DEFAULT_SEED = 42  # rvcbench's evaluation seed: its suites' evaluation.seed and its run seed's default


@dataclass(frozen=True)
class Heard:
    """What Whisper made of a clip: the text, and what the failure modes read (clonebench.failures.flags): the
    decoding's average log-probability and no-speech probability (token-weighted over the segments kept; None
    when none was), the language Whisper identifies on the clip's first 30 s with its probability, and the
    probability it gives the pair's language (``""`` / None for an English-only model or a pair without a
    language). The identification never changes the text: the pair's language is still the one decoded in.
    ``text_logprob``: the mean log-probability per token of the pair's TARGET text, teacher-forced on the clip's
    first 30 s (how well the audio supports the text, whatever Whisper heard; faster-whisper only, clips up to
    30 s; None otherwise)."""

    text: str
    logprob: float | None = None
    no_speech: float | None = None
    language: str = ""
    language_prob: float | None = None
    target_prob: float | None = None
    text_logprob: float | None = None

    def values(self) -> dict:
        # to 3 decimals: a batched decode's scores move in the 6th digit with the batch's other clips (the text
        # does not), and a clip's values must not depend on its batch (tests/integration/test_metric_purity.py)
        r = lambda v: None if v is None else round(float(v), 3)  # noqa: E731
        return {"asr_logprob": r(self.logprob), "asr_no_speech": r(self.no_speech), "asr_language": self.language,
                "asr_language_prob": r(self.language_prob), "asr_target_prob": r(self.target_prob),
                "asr_text_logprob": r(self.text_logprob)}


def identified(probabilities: dict[str, float], language: str | None) -> tuple[str, float, float | None]:
    """(most likely language, its probability, the probability of ``language``) from Whisper's language
    probabilities (codes without the token brackets)."""
    top = max(probabilities, key=probabilities.get)
    target = float(probabilities.get(language, 0.0)) if language else None
    return top, float(probabilities[top]), target


def weighted(segments: list[tuple[float, float, int]]) -> tuple[float | None, float | None]:
    """Token-weighted means of (avg log-prob, no-speech prob, tokens) per segment; (None, None) without tokens."""
    total = sum(n for _, _, n in segments)
    if not total:
        return None, None
    return (sum(lp * n for lp, _, n in segments) / total, sum(ns * n for _, ns, n in segments) / total)


@dataclass(frozen=True)
class Decoding:
    name: str
    temperatures: tuple[float, ...]
    compression_ratio_threshold: float = 2.4
    logprob_threshold: float = -1.0
    no_speech_threshold: float = 0.6

    @property
    def falls_back(self) -> bool:
        return len(self.temperatures) > 1

    def describe(self) -> str:
        temps = ", ".join(f"{t:.1f}" for t in self.temperatures)
        rule = (f"temperature fallback {temps} (retry when compression ratio > {self.compression_ratio_threshold} "
                f"or avg log-prob < {self.logprob_threshold}), one sample per temperature > 0"
                if self.falls_back else f"greedy temperature={temps} (no fallback)")
        return (f"transcribe(task=transcribe, condition_on_previous_text=False, without_timestamps=True): {rule}; "
                f"window skipped when no-speech > {self.no_speech_threshold} and avg log-prob <= "
                f"{self.logprob_threshold}; 30 s windows")

    def openai_kwargs(self) -> dict:
        """openai-whisper ``transcribe`` options (the defaults written out, so a new default cannot creep in)."""
        return {"task": "transcribe", "temperature": self.temperatures,
                "compression_ratio_threshold": self.compression_ratio_threshold,
                "logprob_threshold": self.logprob_threshold, "no_speech_threshold": self.no_speech_threshold,
                "condition_on_previous_text": False, "without_timestamps": True}

    def faster_kwargs(self) -> dict:
        """faster-whisper ``transcribe`` options that mean what ``openai_kwargs`` means there: greedy at
        temperature 0 (faster-whisper's default is a beam of 5) and one sample per higher temperature (its
        default is best of 5), no VAD, its own fallback with the same thresholds."""
        return {"task": "transcribe", "temperature": list(self.temperatures), "beam_size": 1, "best_of": 1,
                "patience": 1, "compression_ratio_threshold": self.compression_ratio_threshold,
                "log_prob_threshold": self.logprob_threshold, "no_speech_threshold": self.no_speech_threshold,
                "condition_on_previous_text": False, "without_timestamps": True, "vad_filter": False}


FALLBACK_TEMPERATURES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
DECODINGS = {"fallback_v1": Decoding("fallback_v1", FALLBACK_TEMPERATURES),
             "greedy_v1": Decoding("greedy_v1", (0.0,))}
DEFAULT_DECODING = "fallback_v1"
DECODING = DECODINGS[DEFAULT_DECODING].describe()  # the default protocol's description (historical baseline)


def whisper_language(language: str | None) -> str | None:
    """The pair's language as upstream hands it to Whisper: lower-cased; None (detect) for '', auto, none, null.
    A region suffix is dropped ('en-US' -> 'en'): upstream passes 'en-us', which Whisper refuses."""
    hint = str(language or "").strip().lower()
    if hint in ("", "auto", "none", "null"):
        return None
    return hint.split("-")[0].split("_")[0]


class WhisperScorer(Scorer):
    metrics = ("wer", "cer")
    needs_reference = False
    needs_text = True
    uses_gpu = True
    sample_rate = 16_000
    seed_policy = (f"each file: configure_seeds((evaluation.seed + sample hash) % (2**32 - 1)) as rvcbench 2.2.1 "
                   f"({sample_seed.POLICY}; sample hash {sample_seed.HASH_RULE})")

    @classmethod
    def preflight(cls, options: dict) -> None:
        transcript.check_requirements()  # the pinned Chinese converter and segmenter, before any scoring

    @abstractmethod
    def model_description(self) -> str: ...

    @abstractmethod
    def transcribe_batch(self, items: list[ScoreItem]) -> list[Heard]: ...

    @abstractmethod
    def weights_sha256(self) -> str: ...

    def decoding(self) -> Decoding:
        return DECODINGS[self.options.get("decoding") or DEFAULT_DECODING]

    def seed(self) -> int:
        seed = self.options.get("seed")
        return DEFAULT_SEED if seed is None else int(seed)

    def sample_seed(self, item: ScoreItem) -> int:
        return sample_seed.scoring_seed(self.seed(), item.sample_id)

    def protocol(self) -> dict:
        return {"backend": self.backend, "model": self.options["model"], "weights_sha256": self.weights_sha256(),
                "decoding": self.decoding().describe(), "decoding_name": self.decoding().name,
                "seed": self.seed(), "sample_seed_policy": sample_seed.POLICY, "sample_hash": sample_seed.HASH_RULE,
                "normalisation": self.options["normalisation"],
                "text": transcript.protocol(self.options["normalisation"])}

    def version(self) -> str:
        return (f"{self.model_description()}; {self.decoding().name}: {self.decoding().describe()}; seed "
                f"{self.seed()} + sample hash per file; language from the pair; jiwer per utterance after "
                f"{self.options['normalisation']} ({transcript.VERSION}); with avg log-prob, no-speech prob and "
                "language identification of the first 30 s, and the target text's teacher-forced log-probability; v4")

    @classmethod
    def source_files(cls) -> list[Path]:
        return [*super().source_files(), Path(__file__), Path(sample_seed.__file__), *transcript.source_files()]

    def score_batch(self, items: list[ScoreItem]) -> list[ScoreRecord]:
        records = []
        for item, heard in zip(items, self.transcribe_batch(items)):
            values = transcript.score_transcript(item.target_text, heard.text,
                                                 whisper_language(item.language) or "", self.options["normalisation"])
            records.append(ScoreRecord(item.sample_id, {**values, **heard.values()}))
        return records
