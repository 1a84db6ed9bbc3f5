"""Pairs: manifests (JSON/CSV), HF datasets, sample identity and input fingerprints."""
