"""What raters read and answer, per kind: the instructions and the rating scale.

- MOS: ITU-T P.800 Annex B, Absolute Category Rating, the listening-quality scale ("Quality of the speech":
  Excellent 5, Good 4, Fair 3, Poor 2, Bad 1), one recording at a time.
- SMOS: the same five points for similarity of the voice to a reference recording of the speaker (the prompt the
  system cloned), the wording of speaker-similarity MOS in voice-cloning papers.
- CMOS: ITU-T P.800 Annex E, Comparison Category Rating ("The quality of the second compared to the quality of
  the first": Much better 3 ... About the same 0 ... Much worse -3).
- Arena: two recordings of one sentence, A and B; which is better overall: A, B or about the same (the
  pairwise preference of public speech arenas; ties allowed).
- MUSHRA: ITU-R BS.1534-3, a continuous 0-100 quality scale (Excellent 80-100, Good 60-80, Fair 40-60, Poor 20-40,
  Bad 0-20) for several unlabelled test signals against an open reference; one of them is the hidden reference.
"""

from __future__ import annotations

COMMON = ("Use headphones in a quiet room. Set a comfortable volume during the training and do not change it "
          "during the test. Play every recording to the end before you answer; you may play it again.")

SCALES = {
    "mos": {"type": "category", "question": "Quality of the speech",
            "points": [[5, "Excellent"], [4, "Good"], [3, "Fair"], [2, "Poor"], [1, "Bad"]]},
    "smos": {"type": "category", "question": "How similar is the voice of the test recording to the voice of the "
             "reference recording?",
             "points": [[5, "Extremely similar"], [4, "Very similar"], [3, "Moderately similar"],
                        [2, "Slightly similar"], [1, "Not at all similar"]]},
    "cmos": {"type": "category", "question": "The quality of B compared to the quality of A is:",
             "points": [[3, "Much better"], [2, "Better"], [1, "Slightly better"], [0, "About the same"],
                        [-1, "Slightly worse"], [-2, "Worse"], [-3, "Much worse"]]},
    "arena": {"type": "category", "question": "Which recording sounds better overall?",
              "points": [["A", "A is better"], ["same", "About the same"], ["B", "B is better"]]},
    "mushra": {"type": "slider", "question": "Basic audio quality compared with the reference", "min": 0, "max": 100,
               "bands": [[80, 100, "Excellent"], [60, 80, "Good"], [40, 60, "Fair"], [20, 40, "Poor"],
                         [0, 20, "Bad"]]},
}

INSTRUCTIONS = {
    "mos": ["In this test you will hear short recordings of speech, one at a time.",
            "After each recording, give your opinion of the quality of the speech on the scale: Excellent, Good, "
            "Fair, Poor or Bad. There are no right or wrong answers: we want your own opinion."],
    "smos": ["Each trial has two recordings: a reference recording of a speaker, and a test recording.",
             "Rate how similar the voice in the test recording is to the voice in the reference recording, from "
             "Extremely similar to Not at all similar. Judge the speaker's voice only: ignore what is said, the "
             "speaking style, the recording quality and any noise."],
    "cmos": ["Each trial has two recordings of the same sentence, A and B.",
             "Compare them and say how the quality of B compares with the quality of A, from Much better (+3) "
             "through About the same (0) to Much worse (-3)."],
    "arena": ["Each trial has two recordings of the same sentence, A and B, made by two different systems.",
              "Listen to both and say which one sounds better overall (naturalness, clarity and quality together): "
              "A is better, B is better, or About the same when you cannot prefer one."],
    "mushra": ["Each screen has a reference recording and several test signals, unlabelled and in random order.",
               "Compare each test signal with the reference and rate its basic audio quality (every difference from "
               "the reference counts) on the scale from 0 to 100: Excellent 80-100, Good 60-80, Fair 40-60, "
               "Poor 20-40, Bad 0-20. One of the test signals is identical to the reference: find it and rate it "
               "100. Switch between the signals and the reference as often as you like."],
}

TRAINING = ("First a short training: a few trials like those of the test, to hear the range of recordings and to "
            "set your volume. Training answers are not used.")


def instructions(kind: str) -> list[str]:
    return INSTRUCTIONS[kind] + [COMMON, TRAINING]
