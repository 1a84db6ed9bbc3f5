"""Which raters are kept: the rules the key recorded when the test was made (``design.SCREENING``).

- MOS / SMOS / CMOS: attention checks. A clearly degraded clip (3.5 kHz low-pass + noise at 0 dB SNR) must be
  rated at most Poor (MOS); another speaker's recording at most Slightly similar to the reference (SMOS); in CMOS
  the clean recording must be preferred to its degraded copy by at least 1; a repeated trial must get the same
  answer within 1 point (CMOS: within 2, in one orientation, whichever clip was shown first). A rater failing
  more than 25 % of their checks is excluded.
- Arena: the clean recording must be picked over its degraded copy ("about the same" fails); a repeated trial
  must not flip (the other system preferred; "about the same" against a preference passes).
- MUSHRA: ITU-R BS.1534-3 post-screening: an assessor who rates the hidden reference below 90 for more than 15 %
  of the test items is excluded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clonebench.listening.ratings import Sheet


@dataclass
class Verdict:
    rater: str
    path: str
    kept: bool
    checks: int
    failed: list[str] = field(default_factory=list)

    @property
    def reason(self) -> str:
        """Why the rater is excluded ('' when kept): the count, then the first failures."""
        if self.kept:
            return ""
        shown = "; ".join(self.failed[:2]) + ("; ..." if len(self.failed) > 2 else "")
        return f"failed {len(self.failed)} of {self.checks} checks: {shown}"


def oriented(key: dict, trial: dict, record: dict) -> int:
    """A CMOS answer as 'second system of the trial compared with the first', whatever order was shown."""
    shown = [key["clips"][c]["system"] for c in record["clips"]]
    return record["rating"] if shown == trial["systems"] else -record["rating"]


def arena_value(key: dict, trial: dict, record: dict) -> int:
    """An arena answer as 'second system of the trial against the first': +1 the second wins, 0 about the same,
    -1 the first wins, whatever order was shown. A check without systems (clean vs degraded): +1 the clean wins."""
    if record["rating"] == "same":
        return 0
    winner = key["clips"][record["clips"][0 if record["rating"] == "A" else 1]]
    if not trial["systems"]:
        return -1 if winner["role"] == "degraded" else 1
    return 1 if winner["system"] == trial["systems"][1] else -1


def _check(key: dict, trial: dict, record: dict, sheet: Sheet, trials: dict) -> str | None:
    """None when the check is passed, else what went wrong."""
    rules, kind = key["screening"], key["kind"]
    if kind == "arena" and trial["type"] == "check_degraded":
        ok = arena_value(key, trial, record) == 1
        return None if ok else f"degraded copy not judged worse (answered {record['rating']!r})"
    if trial["type"] == "check_degraded" and kind == "mos":
        ok = record["rating"] <= rules["degraded_max"]
        return None if ok else f"degraded clip rated {record['rating']} (> {rules['degraded_max']})"
    if trial["type"] == "check_degraded":  # CMOS: the clean clip must win by the margin
        second_degraded = key["clips"][record["clips"][1]]["role"] == "degraded"
        preference = -record["rating"] if second_degraded else record["rating"]
        ok = preference >= rules["cmos_degraded_margin"]
        return None if ok else f"degraded copy not judged worse (clean preferred by {preference})"
    if trial["type"] == "check_other_speaker":
        ok = record["rating"] <= rules["other_speaker_max"]
        return None if ok else f"another speaker rated {record['rating']} similar (> {rules['other_speaker_max']})"
    if trial["type"] == "check_repeat":
        first = trials[trial["repeat_of"]]
        if kind == "arena":
            a, b = arena_value(key, first, sheet.records[first["trial_id"]]), arena_value(key, trial, record)
        elif kind == "cmos":
            a, b = oriented(key, first, sheet.records[first["trial_id"]]), oriented(key, trial, record)
        else:
            a, b = sheet.records[first["trial_id"]]["rating"], record["rating"]
        limit = rules["repeat_max_difference"][kind]
        return None if abs(a - b) <= limit else f"repeated trial answered {a} then {b} (> {limit} apart)"
    return None


def _mushra(key: dict, sheet: Sheet) -> Verdict:
    rules = key["screening"]
    low = []
    for trial in key["trials"]:
        if trial["phase"] != "test":
            continue
        record = sheet.records[trial["trial_id"]]
        hidden = next(k for k, c in enumerate(record["clips"]) if key["clips"][c]["role"] == "natural")
        if record["ratings"][hidden] < rules["mushra_hidden_reference_min"]:
            low.append(f"hidden reference rated {record['ratings'][hidden]} (< {rules['mushra_hidden_reference_min']})")
    items = sum(1 for t in key["trials"] if t["phase"] == "test")
    kept = len(low) <= rules["mushra_max_fraction_below"] * items
    return Verdict(sheet.rater, str(sheet.path), kept, items, low)


def screen(key: dict, sheets: list[Sheet]) -> list[Verdict]:
    if key["kind"] == "mushra":
        return [_mushra(key, s) for s in sheets]
    trials = {t["trial_id"]: t for t in key["trials"]}
    checks = [t for t in key["trials"] if t["phase"] == "test" and t["type"] != "rating"]
    verdicts = []
    for sheet in sheets:
        failed = [f for f in (_check(key, t, sheet.records[t["trial_id"]], sheet, trials) for t in checks) if f]
        kept = len(failed) <= key["screening"]["max_failed_fraction"] * len(checks)
        verdicts.append(Verdict(sheet.rater, str(sheet.path), kept, len(checks), failed))
    return verdicts
