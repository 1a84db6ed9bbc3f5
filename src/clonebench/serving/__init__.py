"""Serving runs (``adversary.measure=stream``): time to first audio, a simulated real-time player, concurrency."""
