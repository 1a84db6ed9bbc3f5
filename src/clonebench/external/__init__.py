"""Audio made anywhere: prompts to export, folders of WAVs checked per id (submitted, leak), recorded as runs
(record) and scored for pair sets (score_folders) and suites (score_suite). Docs: docs/score-folders.md."""
