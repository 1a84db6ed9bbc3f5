"""A simulated listener: a player that starts once a pre-buffer of audio has arrived and then plays at 1x.

Written here because the rule is the definition being measured (docs/serving.md), not a library's: the player
starts at the first arrival that brings the buffered audio to ``prebuffer_s`` (or at the end of the stream, if
the whole answer is shorter), plays at real time, and when the audio received so far is used up before the stream
has ended it stalls until the next chunk arrives, then plays on at once (no re-buffering). A gap shorter than
``STALL_RESOLUTION_S`` is not counted (timer and scheduling noise, inaudible).
"""

from __future__ import annotations

from dataclasses import dataclass

STALL_RESOLUTION_S = 0.001


@dataclass(frozen=True)
class PlayerResult:
    start_s: float         # request start to the start of playback
    stalls: int            # times playback ran out of audio before the stream ended
    stalled_s: float       # seconds spent stalled in all
    first_stall_s: float | None  # request start to the start of the first stall (None: never stalled)

    @property
    def starved(self) -> bool:
        return self.stalls > 0

    def as_dict(self) -> dict:
        return {"start_s": round(self.start_s, 6), "stalls": self.stalls, "stalled_s": round(self.stalled_s, 6),
                "first_stall_s": None if self.first_stall_s is None else round(self.first_stall_s, 6)}


def play(arrivals: list[tuple[float, float]], prebuffer_s: float) -> PlayerResult | None:
    """``arrivals``: (seconds since the request started, audio seconds decodable so far), in arrival order.
    None when no audio arrived."""
    arrivals = [(t, a) for t, a in arrivals if a > 0]
    if not arrivals:
        return None
    total = arrivals[-1][1]
    need = min(prebuffer_s, total)
    start_index = next(i for i, (_, audio) in enumerate(arrivals) if audio >= need - 1e-12)
    clock, buffered = arrivals[start_index]
    start, played = clock, 0.0
    stalls, stalled, first_stall = 0, 0.0, None
    for t, audio in arrivals[start_index + 1:]:
        runs_out = clock + (buffered - played)
        if t - runs_out > STALL_RESOLUTION_S:
            stalls += 1
            stalled += t - runs_out
            first_stall = runs_out if first_stall is None else first_stall
            played = buffered
        else:
            played = min(buffered, played + (t - clock))
        clock, buffered = t, audio
    return PlayerResult(start, stalls, stalled, first_stall)
