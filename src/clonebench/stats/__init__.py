"""Statistics, each procedure once: the studentized speaker-cluster bootstrap and its percentile interval (cluster),
Holm's adjustment (holm), the conventions' paired interval (paired), raters x items bootstrap (raters), seed
variance (seed_variance) and the per-utterance bootstrap of a run's means (utterance). Conventions: docs/statistics.md."""
