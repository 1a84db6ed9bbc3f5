"""Files of an evaluated run: generation_sample_metrics.csv, metrics.json, scoring_manifest.json."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from clonebench.core.atomic import atomic_write_json, atomic_write_text

COLUMNS = ["sample_id", "pair_id", "speaker_id", "generation_status", "generated_audio", "generated_sha256",
           "target_audio", "target_sha256", "target_text", "language", "hypothesis", "sim", "sva", "wer",
           "wer_edits", "wer_ref_words", "wer_substitutions", "wer_deletions", "wer_insertions", "cer", "cer_edits",
           "cer_ref_chars", "cer_substitutions", "cer_deletions", "cer_insertions", "text_rule", "mcd", "dnsmos",
           "dnsmos_sig", "dnsmos_bak", "dnsmos_p808", "stoi", "mos", "emotion_match", "emotion_target",
           "emotion_generated", "fail", "failures", "failure_detail", "fm_speech_ratio", "fm_lead_s", "fm_trail_s",
           "fm_span_s", "fm_expected_s", "fm_expected_from", "fm_repeat_s", "fm_clipped_share", "fm_prompt_corr",
           "fm_rate_ratio",
           "asr_logprob", "asr_no_speech", "asr_language", "asr_language_prob", "asr_target_prob",
           "asr_text_logprob",
           "seed_wer_en", "seed_wer_en_sub", "seed_wer_en_del", "seed_wer_en_ins", "seed_hypothesis_en",
           "seed_wer_zh", "seed_wer_zh_sub", "seed_wer_zh_del", "seed_wer_zh_ins", "seed_hypothesis_zh", "seed_sim",
           "generated_duration_s", "target_duration_s",
           "synthesis_time_s", "errors"]


def write_csv(path: Path, rows: list[dict]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in COLUMNS})
    atomic_write_text(path, buffer.getvalue())


def write_json(path: Path, payload: dict) -> None:
    atomic_write_json(path, payload)
