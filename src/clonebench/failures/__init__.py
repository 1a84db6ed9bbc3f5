"""Per-utterance failure modes of a cloning model: silence, truncation, overlong or looping output, babble, the
wrong language, clipping, and a copy of the reference prompt returned as the clone.

- ``thresholds``: the flags, their thresholds and why (the protocol: its digest is the scorer's fingerprint);
- ``vad``: speech detection (Silero VAD from its wheel, weights sha256-recorded);
- ``measure``: what is measured on the audio (speech share, edges, duration against the text, repeats, clipping);
- ``copy``: is a clip a (processed) copy of another one (also the leak check's rule, ``external/leak.py``);
- ``text``: what the ASR result says (repeated n-grams, confidence, language);
- ``flags``: the verdict per utterance from the measurements and the ASR values;
- ``rates``: failure rates per flag, with intervals, for a run's rows.

The scorer that runs this in the evaluate phase is ``evaluate/scorers/failures.py``.
"""
