"""Scoring saved WAVs. The entry points other rooms call sit here (``phase``, ``scoring``, ``settings``, ``inputs``,
``outputs``, ``given_audio``, ``derived``); ``scorers/`` holds one module per scorer backend, ``execution/`` how
scoring runs (devices, threads, the CPU pool, the metric cache), ``protocols/`` what a score is (the scorer contract
and registry, assets, text rules, validity). Each imports only those after it (docs/architecture.md)."""
