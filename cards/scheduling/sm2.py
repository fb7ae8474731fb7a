"""SuperMemo-2, exactly as DESIGN.md states it.

The easiness factor only ever moves in steps of 0.02 from 2.5, so it is kept as
integer hundredths internally. Plain floats drift (2.5 - 0.14 * 5 ...) and a drift
of 1e-15 is enough to push ``ceil(interval * EF)`` a whole day up.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import IntEnum

MIN_EASINESS_HUNDREDTHS = 130
START_EASINESS = 2.5


class Rating(IntEnum):
    """The four review buttons and the SM-2 quality each one means."""

    AGAIN = 1
    HARD = 3
    GOOD = 4
    EASY = 5


@dataclass(frozen=True)
class SM2State:
    easiness: float = START_EASINESS
    interval: int = 0
    repetitions: int = 0

    @property
    def easiness_hundredths(self) -> int:
        return round(self.easiness * 100)

    def to_dict(self) -> dict[str, float | int]:
        return {"easiness": self.easiness, "interval": self.interval, "repetitions": self.repetitions}

    @classmethod
    def from_dict(cls, data: dict[str, float | int]) -> SM2State:
        return cls(
            easiness=float(data["easiness"]),
            interval=int(data["interval"]),
            repetitions=int(data["repetitions"]),
        )


def _check_quality(quality: object) -> int:
    # bool is an int subclass; True is not a review grade.
    if isinstance(quality, bool) or not isinstance(quality, int) or not 0 <= quality <= 5:
        raise ValueError(f"SM-2 quality must be an int from 0 to 5, not {quality!r}")
    return quality


def easiness_delta_hundredths(quality: int) -> int:
    """EF' - EF for this quality, in hundredths: +10, 0, -14, -32, -54, -80 for q = 5..0."""
    miss = 5 - quality
    # 0.1 - miss * (0.08 + miss * 0.02), scaled by 100 and exact in integers.
    return 10 - miss * (8 + miss * 2)


def review(state: SM2State, quality: int) -> SM2State:
    """Return the state after one review graded ``quality``; ``state`` is left as it was."""
    quality = _check_quality(quality)
    ef = state.easiness_hundredths
    if quality >= 3:
        if state.repetitions == 0:
            interval = 1
        elif state.repetitions == 1:
            interval = 6
        else:
            # ceil(I * EF) with EF in hundredths, in integers: no float can round it up.
            interval = -(-state.interval * ef // 100)
        repetitions = state.repetitions + 1
    else:
        interval = 1
        repetitions = 0
    ef = max(MIN_EASINESS_HUNDREDTHS, ef + easiness_delta_hundredths(quality))
    return replace(state, easiness=ef / 100, interval=interval, repetitions=repetitions)


def preview_intervals(state: SM2State) -> dict[Rating, int]:
    """The interval each review button would give, for labelling the buttons."""
    return {rating: review(state, int(rating)).interval for rating in Rating}


def needs_same_day_repeat(quality: int) -> bool:
    """SM-2 step 7: an item graded below 4 is repeated in the same session."""
    return _check_quality(quality) < 4


__all__ = ["Rating", "SM2State", "review", "preview_intervals", "needs_same_day_repeat"]
