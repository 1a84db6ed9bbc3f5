"""What a listening test presents: a seeded, speaker-stratified sample of pairs, the trials of each kind, the
attention checks, the training trials, and opaque ids for every clip and trial.

Systems are the runs (codes S1, S2, ...) plus, per kind, the natural recordings (``natural``: the target
recording, rated like a system in MOS and SMOS, the hidden reference in MUSHRA, the baseline of a one-run CMOS)
and the MUSHRA low anchor (``anchor``). Ids are HMAC-SHA256 of a per-test secret over a description of the
clip or trial, so nothing in a file name, the page or a ratings file tells a system, a role or a check apart.
A repeated trial gets new clip ids (copies of the same audio), so it is not recognisable by its ids either.

Arena (pairwise) tests compare two systems' clips of one sentence (A/B, "about the same" allowed); the system
pairs are dealt over the items evenly (``balanced_pairs``), the natural recordings joining only a one-run test.

Every rater rates every trial (a fully crossed raters x items design, which the two-way bootstrap assumes)."""

from __future__ import annotations

import hashlib
import hmac
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from clonebench.core.errors import ClonebenchError
from clonebench.listening.sources import Pair, Recording, System

KINDS = ("mos", "smos", "cmos", "mushra", "arena")
NATURAL, ANCHOR = "natural", "anchor"
NATURAL_LABEL, ANCHOR_LABEL = "natural recordings", "anchor (3.5 kHz low-pass)"
# the checks each kind uses, and what a rater must answer to pass one (recorded in the key, applied by results)
SCREENING = {
    "max_failed_fraction": 0.25,    # MOS/SMOS/CMOS: a rater failing more than this share of checks is excluded
    "degraded_max": 2,              # MOS: a clearly degraded clip rated at most "Poor"
    "other_speaker_max": 2,         # SMOS: another speaker's voice rated at most "Slightly similar"
    "cmos_degraded_margin": 1,      # CMOS: the clean clip preferred to its degraded copy by at least 1
    "repeat_max_difference": {"mos": 1, "smos": 1, "cmos": 2, "arena": 1},  # |first - repeat| (CMOS, arena: in
    # one orientation; arena answers as -1 first system wins, 0 about the same, +1 second wins: a flip fails)
    "arena_clean_must_win": True,   # arena: the clean clip must be picked over its degraded copy ("same" fails)
    "mushra_hidden_reference_min": 90,    # ITU-R BS.1534-3 post-screening: hidden reference rated below 90 ...
    "mushra_max_fraction_below": 0.15,    # ... for more than 15 % of the items excludes the assessor
}


@dataclass
class Clip:
    clip_id: str
    role: str                 # generated | natural | prompt | reference | anchor | degraded | other_speaker
    system: str | None        # the condition a rating of this clip scores (S1.., natural, anchor), else None
    item: str                 # pair id the audio belongs to
    source: Recording
    transform: str = "none"   # none | lowpass_3500 | degraded


@dataclass
class Trial:
    trial_id: str
    phase: str                # training | test
    type: str                 # rating | check_degraded | check_other_speaker | check_repeat
    item: str
    clips: list[str]
    reference: str | None = None
    repeat_of: str | None = None
    systems: list[str] = field(default_factory=list)   # CMOS, arena: [first, second]: second relative to first


@dataclass
class Design:
    kind: str
    seed: int
    items: list[Pair]
    training_item: Pair
    clips: dict[str, Clip]
    trials: list[Trial]
    speakers: dict[str, int]          # sampled items per speaker
    eligible: int
    checks_wanted: int
    notes: list[str] = field(default_factory=list)


class _Ids:
    """One id per description (the same clip in two CMOS comparisons keeps its id); distinct descriptions get
    distinct ids (80 bits of HMAC: a collision is checked, never expected)."""

    def __init__(self, secret: str, prefix: str, once: bool = False):
        self.secret, self.prefix, self.issued, self.once = secret.encode(), prefix, {}, once

    def __call__(self, description: str) -> str:
        if self.once and description in self.issued:
            raise AssertionError(f"{description} issued twice")  # trial ids: one trial per description
        if description not in self.issued:
            digest = self.prefix + hmac.new(self.secret, description.encode("utf-8"), hashlib.sha256).hexdigest()[:20]
            if digest in self.issued.values():
                raise AssertionError(f"id collision for {description}")
            self.issued[description] = digest
        return self.issued[description]


def stratified_sample(pairs: dict[str, Pair], n: int, rng: np.random.Generator) -> list[Pair]:
    """``n`` pairs spread over speakers as evenly as possible: speakers in a seeded order, each speaker's pairs
    shuffled, then one pair per speaker in turn (counts per speaker differ by at most one while they last)."""
    if n < 1 or n > len(pairs):
        raise ClonebenchError(f"--items {n}: the runs have {len(pairs)} pair(s) in common; give 1..{len(pairs)}")
    by_speaker: dict[str, list[str]] = defaultdict(list)
    for pair_id in sorted(pairs):
        by_speaker[pairs[pair_id].speaker_id].append(pair_id)
    speakers = sorted(by_speaker)
    rng.shuffle(speakers)
    queues = {s: list(rng.permutation(by_speaker[s])) for s in speakers}
    out: list[Pair] = []
    while len(out) < n:
        for speaker in speakers:
            if queues[speaker] and len(out) < n:
                out.append(pairs[str(queues[speaker].pop(0))])
    return out


def balanced_pairs(comparisons: list[tuple[str, str]], n_items: int, per_item: int,
                   rng: np.random.Generator) -> list[list[tuple[str, str]]]:
    """Arena: ``per_item`` system pairs for each of ``n_items`` items, every pair used equally often (counts differ
    by at most one) and no pair twice on one item: the pairs in a seeded order, dealt round-robin (item k gets
    positions k*per_item ... k*per_item + per_item - 1 of the cycle)."""
    if not 1 <= per_item <= len(comparisons):
        raise ClonebenchError(f"--pairs-per-item {per_item}: give 1..{len(comparisons)} (the system pairs)")
    order = [comparisons[k] for k in rng.permutation(len(comparisons))]
    return [[order[(k * per_item + j) % len(order)] for j in range(per_item)] for k in range(n_items)]


def build_design(kind: str, systems: list[System], pairs: dict[str, Pair], n_items: int, seed: int,
                 secret: str, checks: int = 2, pairs_per_item: int | None = None) -> Design:
    if kind not in KINDS:
        raise ClonebenchError(f"--kind {kind!r}: choose one of {', '.join(KINDS)}")
    rng = np.random.default_rng(seed)
    items = stratified_sample(pairs, n_items, rng)
    rest = [pairs[p] for p in sorted(pairs) if pairs[p] not in items]
    training_item = rest[int(rng.integers(len(rest)))] if rest else items[0]
    clip_id, trial_id = _Ids(secret, "c"), _Ids(secret, "t", once=True)
    clips: dict[str, Clip] = {}

    def clip(role: str, system: str | None, pair: Pair | str, source: Recording, transform: str = "none",
             copy: int = 0) -> str:
        item = pair if isinstance(pair, str) else pair.pair_id
        cid = clip_id(f"{role}|{system}|{item}|{source.sha256}|{transform}|{copy}")
        clips[cid] = Clip(cid, role, system, item, source, transform)
        return cid

    codes = [f"S{k + 1}" for k in range(len(systems))]
    by_code = dict(zip(codes, systems))

    def system_clip(code: str, pair: Pair, copy: int = 0) -> str:
        if code == NATURAL:
            return clip("natural", NATURAL, pair, pair.target, copy=copy)
        return clip("generated", code, pair, by_code[code].clips[pair.pair_id], copy=copy)

    trials: list[Trial] = []
    notes: list[str] = []
    rated = codes + ([NATURAL] if kind in ("mos", "smos") else [])
    comparisons = [(NATURAL, codes[0])] if len(codes) == 1 else \
        [(codes[i], codes[j]) for i in range(len(codes)) for j in range(i + 1, len(codes))]

    schedule = balanced_pairs(comparisons, len(items), pairs_per_item or len(comparisons), rng) \
        if kind == "arena" else [comparisons] * len(items)

    def prompt(pair: Pair) -> str:  # SMOS: the reference speaker's recording (one id per pair)
        return clip("prompt", None, pair, pair.prompt)

    for pair, drawn in zip(items, schedule):
        if kind in ("mos", "smos"):
            for code in rated:
                trials.append(Trial(trial_id(f"test|{pair.pair_id}|{code}"), "test", "rating", pair.pair_id,
                                    [system_clip(code, pair)], prompt(pair) if kind == "smos" else None))
        elif kind in ("cmos", "arena"):
            for first, second in drawn:
                order = [first, second] if rng.random() < 0.5 else [second, first]
                trials.append(Trial(trial_id(f"test|{pair.pair_id}|{first}|{second}"), "test", "rating",
                                    pair.pair_id, [system_clip(c, pair) for c in order], systems=[first, second]))
        else:
            conditions = [system_clip(c, pair) for c in codes] + [
                clip("natural", NATURAL, pair, pair.target, copy=1),
                clip("anchor", ANCHOR, pair, pair.target, "lowpass_3500")]
            trials.append(Trial(trial_id(f"test|{pair.pair_id}"), "test", "rating", pair.pair_id,
                                [conditions[k] for k in rng.permutation(len(conditions))],
                                clip("reference", None, pair, pair.target)))
    wanted = checks if kind != "mushra" else 0
    if wanted:
        trials += _checks(kind, items, wanted, rng, trials, clips, clip, prompt, trial_id, notes)
    trials += _training(kind, training_item, pairs, clip, prompt, trial_id)
    speakers: dict[str, int] = defaultdict(int)
    for pair in items:
        speakers[pair.speaker_id] += 1
    order = rng.permutation(len(trials))  # the page's design order says nothing either (each rater reshuffles)
    return Design(kind, seed, items, training_item, clips, [trials[k] for k in order], dict(speakers), len(pairs),
                  wanted, notes)


def _checks(kind, items, wanted, rng, trials, clips, clip, prompt, trial_id, notes) -> list[Trial]:
    out = []
    picks = [items[k] for k in rng.choice(len(items), size=min(wanted, len(items)), replace=False)]
    for pair in picks:
        if kind == "mos":
            out.append(Trial(trial_id(f"check|degraded|{pair.pair_id}"), "test", "check_degraded", pair.pair_id,
                             [clip("degraded", None, pair, pair.target, "degraded")]))
        elif kind in ("cmos", "arena"):
            pair_clips = [clip("natural", None, pair, pair.target, copy=2),
                          clip("degraded", None, pair, pair.target, "degraded")]
            out.append(Trial(trial_id(f"check|degraded|{pair.pair_id}"), "test", "check_degraded", pair.pair_id,
                             pair_clips if rng.random() < 0.5 else pair_clips[::-1]))
        else:
            others = [p for p in items if p.speaker_id != pair.speaker_id]
            if not others:
                notes.append("SMOS: one speaker only, so no other-speaker check; repeats only")
                break
            other = others[int(rng.integers(len(others)))]
            out.append(Trial(trial_id(f"check|other|{pair.pair_id}"), "test", "check_other_speaker", pair.pair_id,
                             [clip("other_speaker", None, pair, other.target, copy=1)], prompt(pair)))
    rating = [t for t in trials if t.type == "rating"]
    for k in rng.choice(len(rating), size=min(wanted, len(rating)), replace=False):
        first = rating[k]
        copies = []
        for cid in first.clips:
            c = clips[cid]
            copies.append(clip(c.role, c.system, c.item, c.source, c.transform, copy=10 + int(k)))
        out.append(Trial(trial_id(f"check|repeat|{first.trial_id}"), "test", "check_repeat", first.item, copies,
                         first.reference, repeat_of=first.trial_id, systems=list(first.systems)))
    return out


def _training(kind, pair, pairs, clip, prompt, trial_id) -> list[Trial]:
    """Practice trials (not analysed): the range from natural speech to a degraded clip, on a pair kept out of
    the test when the runs have one."""
    natural = clip("natural", None, pair, pair.target, copy=20)
    degraded = clip("degraded", None, pair, pair.target, "degraded", copy=20)
    if kind == "mos":
        groups = [([natural], None), ([degraded], None)]
    elif kind == "smos":
        others = [p for p in list(pairs.values()) if p.speaker_id != pair.speaker_id]
        groups = [([natural], prompt(pair))]
        if others:
            groups.append(([clip("other_speaker", None, pair, others[0].target, copy=20)], prompt(pair)))
    elif kind in ("cmos", "arena"):
        groups = [([natural, degraded], None)]
    else:
        groups = [([natural, clip("anchor", None, pair, pair.target, "lowpass_3500", copy=20), degraded],
                   clip("reference", None, pair, pair.target, copy=20))]
    return [Trial(trial_id(f"training|{k}"), "training", "rating", pair.pair_id, group, ref)
            for k, (group, ref) in enumerate(groups)]

