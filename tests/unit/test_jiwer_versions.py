"""jiwer 4.0.0 (clonebench's pin) and 3.1.0 (what rvcbench 2.2.1 pins: ``jiwer<4``) give the same WER.

Upstream computes ``jiwer.wer(normalised reference, normalised hypothesis)``; clonebench ``jiwer.process_words``
on the same strings (for exact edit counts). On the project's test strings (the LibriVox and cards transcripts,
the demo sentences, the normalisation examples), each against edited copies of itself (a word dropped, inserted,
replaced, two swapped, case and punctuation changed, an empty hypothesis) and against the other sentences, after
each normalisation, both versions must give the same WER and the same substitution, deletion and insertion counts.
jiwer 3.1.0 is installed ``--no-deps`` into its own folder by ``scripts/setup.sh`` and run in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clonebench.evaluate.protocols.wer_text import NORMALISATIONS, normalise

JIWER3 = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "clonebench" / "peer" / "jiwer-3.1.0"
EXTRA = ["he was not an ill disposed young man", "He was not an ill-disposed young man.", "Hello, World!",
         "I have 2 cats.", "I have two cats", "Mr. Smith's co-operation, isn't it?"]

COUNT = """
import json, sys
import jiwer
assert jiwer.__file__.startswith(sys.argv[1]), jiwer.__file__
out = []
for ref, hyp in json.load(sys.stdin):
    words = jiwer.process_words(ref, hyp)
    out.append([jiwer.wer(ref, hyp), words.substitutions, words.deletions, words.insertions])
print(json.dumps(out))
"""


def sentences(human_speech) -> list[str]:
    from clonebench.demo.dataset import SENTENCES

    return [*human_speech["librivox"].values(), *human_speech["cards"].values(), *SENTENCES, *EXTRA]


def edits(text: str) -> list[str]:
    words = text.split()
    out = [text, text.upper(), text.rstrip(".!?") + "!", "", " ".join(words[1:]), " ".join(["um", *words]),
           " ".join(words[:-1] + ["elephant"])]
    if len(words) > 2:
        out.append(" ".join([words[1], words[0], *words[2:]]))
    return out


def pairs(human_speech) -> list[tuple[str, str]]:
    texts = sentences(human_speech)
    raw = [(ref, hyp) for k, ref in enumerate(texts) for hyp in edits(ref) + [texts[(k + 1) % len(texts)]]]
    out = []
    for name in sorted(NORMALISATIONS):
        for ref, hyp in raw:
            ref_n, hyp_n = normalise(ref, name), normalise(hyp, name)
            if ref_n.strip():  # both refuse an empty reference (clonebench before calling jiwer)
                out.append((ref_n, hyp_n))
    return out


def test_jiwer_3_1_0_and_4_0_0_agree_on_the_projects_strings(human_speech):
    import importlib.metadata

    import jiwer

    if not (JIWER3 / "jiwer" / "__init__.py").is_file():
        pytest.fail(f"jiwer 3.1.0 is not installed at {JIWER3}: run `bash scripts/setup.sh`")
    assert importlib.metadata.version("jiwer") == "4.0.0"
    chosen = pairs(human_speech)
    result = subprocess.run([sys.executable, "-c", COUNT, str(JIWER3)], input=json.dumps(chosen), text=True,
                            capture_output=True, env={**os.environ, "PYTHONPATH": str(JIWER3)}, check=False)
    assert result.returncode == 0, result.stderr
    theirs = json.loads(result.stdout)
    ours = []
    for ref, hyp in chosen:
        words = jiwer.process_words(ref, hyp)
        ours.append([jiwer.wer(ref, hyp), words.substitutions, words.deletions, words.insertions])
    differing = [(pair, a, b) for pair, a, b in zip(chosen, ours, theirs) if a != b]
    assert not differing, differing[:5]
    assert len(chosen) > 300 and any(o[0] > 0 for o in ours) and any(o[0] == 0 for o in ours)
