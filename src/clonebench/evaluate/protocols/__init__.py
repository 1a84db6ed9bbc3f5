"""What a score is: the scorer contract and registry, the model assets and their sha256 locks, audio read as each
reference library reads it, the text rules (WER/CER normalisation, Chinese, transcripts), per-sample seeds, which
values count, and the derived tasks' transforms. Imports nothing else of evaluate/."""
