"""The one interface the review flow schedules through: SM-2 (the default, exact) or FSRS-6 (opt-in).

Why both states travel together: a learner can switch back from FSRS to SM-2 and find SM-2's state
where SM-2 would have it, so under FSRS every review still moves the SM-2 state (SM-2's rules, its
same-day repeats included) while FSRS decides the due day. Under SM-2 the FSRS state is left alone;
switching recomputes it from the card's full history.

Pure: no Django, no clock; ``today`` is always the learner's day.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date
from typing import Literal, Protocol

from cards.scheduling import fsrs6, sm2

SchedulerName = Literal["sm2", "fsrs"]


@dataclass(frozen=True)
class CardMemory:
    """What any scheduler knows about one learner's card: SM-2's state and FSRS's (None until computed)."""

    sm2: sm2.SM2State
    fsrs: fsrs6.Memory | None = None


@dataclass(frozen=True)
class Step:
    """A review's result: the new memory, the days until the card is due (None: the due day stays),
    and whether the card comes back in today's session."""

    memory: CardMemory
    interval: int | None
    again_today: bool


class Scheduler(Protocol):
    @property
    def name(self) -> SchedulerName: ...  # read-only: the schedulers are frozen dataclasses

    def review(self, memory: CardMemory, quality: int, today: date, same_day_repeat: bool) -> Step: ...

    def preview(self, memory: CardMemory, today: date) -> dict[sm2.Rating, int]:
        """The interval (days) each button would give, for labelling the buttons."""
        ...


@dataclass(frozen=True)
class SM2Scheduler:
    name: SchedulerName = "sm2"

    def review(self, memory: CardMemory, quality: int, today: date, same_day_repeat: bool) -> Step:
        """SM-2 exactly; a same-day repeat (step 7) changes nothing but whether it comes back again."""
        again = sm2.needs_same_day_repeat(quality)
        if same_day_repeat:
            return Step(memory, None, again)
        after = sm2.review(memory.sm2, quality)
        return Step(replace(memory, sm2=after), after.interval, again)

    def preview(self, memory: CardMemory, today: date) -> dict[sm2.Rating, int]:
        return sm2.preview_intervals(memory.sm2)


@dataclass(frozen=True)
class FSRSScheduler:
    """FSRS-6 with the learner's parameters (None: the package's defaults) and desired retention."""

    parameters: Sequence[float] | None = None
    desired_retention: float = fsrs6.DEFAULT_RETENTION
    name: SchedulerName = "fsrs"

    @property
    def fsrs(self) -> fsrs6.Engine:
        return fsrs6.scheduler(self.parameters, self.desired_retention)

    def review(self, memory: CardMemory, quality: int, today: date, same_day_repeat: bool) -> Step:
        """FSRS decides the due day, a same-day review included (a short-term review to FSRS); SM-2's
        state moves as SM-2 would move it. Only Again brings the card back today."""
        after, days = fsrs6.review(self.fsrs, memory.fsrs, quality, today)
        state = memory.sm2 if same_day_repeat else sm2.review(memory.sm2, quality)
        return Step(CardMemory(sm2=state, fsrs=after), days, fsrs6.rating_for_quality(quality) == 1)

    def preview(self, memory: CardMemory, today: date) -> dict[sm2.Rating, int]:
        fsrs = self.fsrs
        return {rating: fsrs6.review(fsrs, memory.fsrs, int(rating), today)[1] for rating in sm2.Rating}


def for_learner(
    name: str, parameters: Sequence[float] | None = None, desired_retention: float = fsrs6.DEFAULT_RETENTION
) -> Scheduler:
    """The scheduler a learner's settings name."""
    if name == "fsrs":
        return FSRSScheduler(tuple(parameters) if parameters else None, desired_retention)
    if name == "sm2":
        return SM2Scheduler()
    raise ValueError(f"unknown scheduler {name!r}: sm2 or fsrs")


__all__ = ["CardMemory", "FSRSScheduler", "SM2Scheduler", "Scheduler", "SchedulerName", "Step", "for_learner"]
