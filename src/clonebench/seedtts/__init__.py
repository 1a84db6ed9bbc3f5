"""Seed-TTS-eval (BytedanceSpeech/seed-tts-eval) as a benchmark beside RVCBench, its protocol in one room: the text
rule of its WER (``text``), its speaker verifier (``verifier`` over ``verifier_wavlm`` and ``verifier_ecapa``), its
three scorers (``seedtts_sim``, ``seedtts_whisper``, ``seedtts_paraformer``: the ``seed_sim`` and ``seed_wer_*``
metrics, found by ``evaluate/protocols/registry.py`` by name only), and its results the way papers print them (``summary``,
``published``): per test set WER (%) and SIM with intervals and coverage.

Its meta lists are read as pair manifests by ``data/seedtts.py``, below this room: the manifest reader
(``data/manifest.py``) takes them as one more manifest format, and a room below may not import one above.
"""
