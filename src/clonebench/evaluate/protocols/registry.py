"""Scorer registry: metric -> scorer group -> 'module:Class', imported only when a run asks for it."""

from __future__ import annotations

import importlib

SCORERS: dict[str, str] = {
    "ecapa": "clonebench.evaluate.scorers.ecapa:EcapaScorer",
    "whisper/openai_whisper": "clonebench.evaluate.scorers.whisper_openai:OpenAIWhisperScorer",
    "whisper/faster_whisper": "clonebench.evaluate.scorers.whisper_faster:FasterWhisperScorer",
    "mcd": "clonebench.evaluate.scorers.mcd:MCDScorer",
    "dnsmos": "clonebench.evaluate.scorers.dnsmos:DNSMOSScorer",
    "stoi": "clonebench.evaluate.scorers.stoi:STOIScorer",
    "utmos": "clonebench.evaluate.scorers.utmos:UTMOSScorer",
    "emotion": "clonebench.evaluate.scorers.emotion:EmotionScorer",
    "failures": "clonebench.evaluate.scorers.failures:FailureScorer",
    "seedtts_sim": "clonebench.seedtts.seedtts_sim:SeedTTSSimScorer",
    "seedtts_whisper": "clonebench.seedtts.seedtts_whisper:SeedTTSWhisperScorer",
    "seedtts_paraformer": "clonebench.seedtts.seedtts_paraformer:SeedTTSParaformerScorer",
}
METRIC_GROUPS = {"sim": "ecapa", "sva": "ecapa", "wer": "whisper", "cer": "whisper", "mcd": "mcd", "dnsmos": "dnsmos",
                 "stoi": "stoi", "mos": "utmos", "emotion_match": "emotion", "fail": "failures",
                 "seed_sim": "seedtts_sim",
                 # Seed-TTS-eval WER: one metric per language, as the benchmark (its own ASR per test set)
                 "seed_wer_en": "seedtts_whisper", "seed_wer_zh": "seedtts_paraformer"}
# a metric whose verdict also reads another group's values: ``fail`` (failure modes) reads Whisper's transcript,
# confidence and language identification, so asking for it scores the Whisper group too
ALSO_NEEDS = {"fail": ("whisper",)}
# groups whose scorer reads the pair's prompt (part of the cache key)
PROMPT_GROUPS = frozenset({"failures", "seedtts_sim"})
WER_BACKENDS = ("openai_whisper", "faster_whisper")


def groups_for(metrics: tuple[str, ...]) -> list[str]:
    """Scorer groups needed for ``metrics``, in first-mentioned order (each loaded once)."""
    out: list[str] = []
    for metric in metrics:
        for group in (METRIC_GROUPS[metric], *ALSO_NEEDS.get(metric, ())):
            if group not in out:
                out.append(group)
    return out


def scorer_class(group: str, wer_backend: str):
    key = f"whisper/{wer_backend}" if group == "whisper" else group
    module_name, _, attr = SCORERS[key].partition(":")
    return getattr(importlib.import_module(module_name), attr)

# Scorers whose real weights were never run here (not available offline): the report marks their cells.
UNVERIFIED: dict[str, str] = {
    "utmos": "UTMOS22-strong (SpeechMOS) scorer unverified: its real weights were never run by this harness's tests "
             "(only the loading, locking and scoring plumbing, with a tiny stand-in model)",
    "emotion": "SpeechBrain IEMOCAP emotion scorer unverified: its real weights were never run by this harness's "
               "tests (only the loading, locking and scoring plumbing, with a tiny stand-in model)",
    "seedtts_sim": "Seed-TTS-eval WavLM-Large ECAPA-TDNN SIM unverified: the published checkpoint was never run by this "
                   "harness's tests (only the model code, loading and scoring path, equal to the benchmark's "
                   "UniSpeech code on a tiny random checkpoint: bench/seedtts_sim_parity.py)",
    "seedtts_whisper": "Seed-TTS-eval Whisper large-v3 WER unverified: the real weights were never run by this harness's "
                       "tests (only the loading, locking and scoring path, equal to the benchmark's run_wer.py on a "
                       "tiny random checkpoint: bench/seedtts_parity.py)",
    "seedtts_paraformer": "Seed-TTS-eval Paraformer-zh WER unverified: the real weights were never run by this harness's "
                          "tests (only the loading, locking and scoring path, equal to the benchmark's run_wer.py on a "
                          "tiny random checkpoint: bench/seedtts_parity.py)",
}
