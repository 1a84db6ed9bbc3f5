"""Simulated raters for listening tests: ratings files as the page writes them, drawn from a known model, so the
statistics can be checked against the answer they must recover.

Model (category kinds): answer = clip(round(mu[condition] + rater bias + item effect + noise)) on the kind's scale,
with the rater bias ~ N(0, rater_sd), the item effect ~ N(0, item_sd) (shared by every rater and condition) and
the noise ~ N(0, noise_sd). For CMOS, mu is the true difference "second vs first". MUSHRA uses the same model on
0..100. A careless rater answers uniformly at random. ``expected_mean`` is the model's population mean of the
discretised answer, the known value a CI must cover."""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from clonebench.listening.integrity import sealed
from clonebench.listening.wording import SCALES

CHECK_TRUTH = {"degraded": 1.0, "other_speaker": 1.2, "cmos_degraded": 2.6}


def scale_range(kind: str) -> tuple[int, int]:
    scale = SCALES[kind]
    if scale["type"] == "slider":
        return scale["min"], scale["max"]
    points = [p[0] for p in scale["points"]]
    return min(points), max(points)


def expected_mean(mu: float, sd: float, kind: str) -> float:
    """E[clip(round(mu + Z), lo, hi)] for Z ~ N(0, sd^2)."""
    lo, hi = scale_range(kind)
    values = np.arange(lo, hi + 1)
    upper = np.where(values == hi, np.inf, values + 0.5)
    lower = np.where(values == lo, -np.inf, values - 0.5)
    probs = norm.cdf((upper - mu) / sd) - norm.cdf((lower - mu) / sd)
    return float((values * probs).sum())


class Population:
    """Item effects shared by every simulated rater of one test."""

    def __init__(self, key: dict, truth: dict[str, float], seed: int, rater_sd=0.3, item_sd=0.3, noise_sd=0.5):
        self.key, self.truth = key, truth
        self.rng = np.random.default_rng(seed)
        self.rater_sd, self.noise_sd, self.item_sd = rater_sd, noise_sd, item_sd
        self.items = {i["pair_id"]: float(self.rng.normal(0, item_sd)) for i in key["sampling"]["items"]}
        self.lo, self.hi = scale_range(key["kind"])

    @property
    def total_sd(self) -> float:
        return float(np.sqrt(self.rater_sd ** 2 + self.item_sd ** 2 + self.noise_sd ** 2))

    def _answer(self, mu: float, bias: float, item: str, careless: bool, hidden: bool = False) -> int:
        if careless:
            return int(self.rng.integers(self.lo, self.hi + 1))
        if hidden:  # a MUSHRA hidden reference: an attentive rater finds it and rates it at (or near) the top
            return int(np.clip(np.round(mu - abs(self.rng.normal(0, self.noise_sd / 2))), self.lo, self.hi))
        value = mu + bias + self.items.get(item, 0.0) + self.rng.normal(0, self.noise_sd)
        return int(np.clip(np.round(value), self.lo, self.hi))

    def _mu(self, trial: dict, clip: str) -> float:
        role, system = self.key["clips"][clip]["role"], self.key["clips"][clip]["system"]
        if role == "degraded":
            return self.truth.get("degraded", CHECK_TRUTH["degraded"])
        if role == "other_speaker":
            return self.truth.get("other_speaker", CHECK_TRUTH["other_speaker"])
        return self.truth[system]

    def rater(self, rater_id: str, careless: bool = False) -> dict:
        """One rater's file (sealed with the test's salt, as the page seals it)."""
        key, kind = self.key, self.key["kind"]
        bias = float(self.rng.normal(0, self.rater_sd))
        test = [t for t in key["trials"] if t["phase"] == "test"]
        order = self.rng.permutation(len(test))
        records = []
        for position, k in enumerate(order):
            trial = test[k]
            clips = list(trial["clips"])
            record = {"trial": trial["trial_id"], "position": position, "reference": trial["reference"],
                      "plays": {c: 1 for c in clips}, "ends": {}, "shown_ms": 1000 * position,
                      "answered_ms": 1000 * position + 900}
            if kind == "mushra":
                clips = [clips[j] for j in self.rng.permutation(len(clips))]
                record["ratings"] = [self._answer(self._mu(trial, c), bias, trial["item"], careless,
                                                  hidden=key["clips"][c]["system"] == "natural") for c in clips]
            elif kind == "cmos":
                if self.rng.random() < 0.5:
                    clips = clips[::-1]
                systems = [key["clips"][c]["system"] for c in clips]
                if trial["systems"]:
                    mu = self.truth[systems[1]] - self.truth[systems[0]]
                else:  # the degraded check: clean vs its degraded copy
                    degraded_second = key["clips"][clips[1]]["role"] == "degraded"
                    mu = -CHECK_TRUTH["cmos_degraded"] if degraded_second else CHECK_TRUTH["cmos_degraded"]
                record["rating"] = self._answer(mu, bias, trial["item"], careless)
            else:
                record["rating"] = self._answer(self._mu(trial, clips[0]), bias, trial["item"], careless)
            record["clips"] = clips
            records.append(record)
        payload = {"schema": "clonebench.listening.ratings/v1", "test_id": key["test_id"], "kind": kind,
                   "rater_id": rater_id, "user_agent": "simulated", "started_at": "2026-01-01T00:00:00.000Z",
                   "finished_at": "2026-01-01T00:30:00.000Z", "training": [], "trials": records}
        return sealed(key["salt"], payload)
