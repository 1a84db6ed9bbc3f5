"""Scoring saved WAVs: scorer registry, device-keyed provenance, metric cache."""
