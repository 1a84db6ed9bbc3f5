"""Seed-TTS-eval (BytedanceSpeech/seed-tts-eval) as a benchmark beside RVCBench: its test sets read as pair sets
(``data/seedtts.py``), its own scoring protocol (``seed_wer``, ``seed_sim``), and its results the way papers print
them (``summary``): per test set WER (%) and SIM with intervals and coverage.
"""
