"""FSRS-6 (the pinned ``fsrs`` package) on whole learner days, for the review flow and the scoring.

Why a module of our own around the package: the review flow counts in learner days, not in
instants, so every review is replayed at noon UTC of its day (one rule for scheduling, switching and
:mod:`cards.scheduling.evaluate`); the package's own fuzz draws from the global ``random`` module,
so it is always off here.

Pure: no Django, no clock, no torch (the package's optimizer needs torch and is imported only by the
worker's task).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from fsrs import Card as FSRSCard
from fsrs import Rating as FSRSRating
from fsrs import Scheduler as FSRSScheduler
from fsrs import State as FSRSState
from fsrs.scheduler import DEFAULT_PARAMETERS, MAX_DIFFICULTY, MIN_DIFFICULTY, STABILITY_MIN

Engine = FSRSScheduler  # the fsrs library's scheduler, as this module's callers name it

DEFAULT_RETENTION = 0.9
EPOCH = date(1970, 1, 1)
MAX_SPREAD_DAYS = 7


def noon_utc(day: int | date) -> datetime:
    """The instant a review of learner day ``day`` (a day number, day 0 = 1970-01-01, or a date) is replayed at."""
    number = day if isinstance(day, int) else (day - EPOCH).days
    return datetime(1970, 1, 1, 12, tzinfo=UTC) + timedelta(days=number)


def rating_for_quality(quality: int) -> int:
    """An SM-2 quality 0..5 as an FSRS rating 1..4: a failed recall (below 3) is Again, then Hard, Good, Easy.

    The review buttons send 1 / 3 / 4 / 5 and map back to their own button; a drill's or output
    card's verdict arrives as a quality (0 to 5) and maps the same way, on the web and the API.
    """
    if isinstance(quality, bool) or not isinstance(quality, int) or not 0 <= quality <= 5:
        raise ValueError(f"SM-2 quality must be an int from 0 to 5, not {quality!r}")
    return {3: 2, 4: 3, 5: 4}.get(quality, 1)


def scheduler(parameters: Sequence[float] | None = None, desired_retention: float = DEFAULT_RETENTION) -> FSRSScheduler:
    """The package's scheduler as the project uses it: no learning or relearning steps, no fuzz.

    Without steps every review lands in whole days; a failed card still comes back the same day
    through the review flow's same-day repeat, which FSRS then sees as a short-term review.
    """
    return FSRSScheduler(
        parameters=tuple(parameters) if parameters else DEFAULT_PARAMETERS,
        desired_retention=desired_retention,
        learning_steps=(),
        relearning_steps=(),
        enable_fuzzing=False,
    )


@dataclass(frozen=True)
class Memory:
    """A card's FSRS memory state after its last review, on day ``last_day``."""

    stability: float
    difficulty: float
    last_day: date


def _card(memory: Memory | None, today: date) -> FSRSCard:
    # fsrs's Card reads the clock unless it is given an id and a due date.
    if memory is None:
        return FSRSCard(card_id=1, due=noon_utc(today))
    return FSRSCard(
        card_id=1,
        state=FSRSState.Review,
        step=None,
        stability=memory.stability,
        difficulty=memory.difficulty,
        due=noon_utc(today),
        last_review=noon_utc(memory.last_day),
    )


def review(fsrs: FSRSScheduler, memory: Memory | None, quality: int, today: date) -> tuple[Memory, int]:
    """The memory state after a review on ``today`` graded ``quality``, and the interval FSRS gives (days)."""
    card, _ = fsrs.review_card(_card(memory, today), FSRSRating(rating_for_quality(quality)), noon_utc(today))
    assert card.stability is not None and card.difficulty is not None
    return Memory(card.stability, card.difficulty, today), (card.due - noon_utc(today)).days


def retrievability(fsrs: FSRSScheduler, memory: Memory, today: date) -> float:
    return fsrs.get_card_retrievability(_card(memory, today), noon_utc(today))


def interval(fsrs: FSRSScheduler, stability: float) -> int:
    """The whole days until recall probability falls to the scheduler's desired retention."""
    return fsrs._next_interval(stability=stability)


def from_history(fsrs: FSRSScheduler, reviews: Iterable[tuple[date, int]]) -> Memory | None:
    """Replay a card's full history, ``(day, quality)`` in the order reviewed, as Anki does on switching."""
    memory = None
    for day, quality in reviews:
        memory, _ = review(fsrs, memory, quality, day)
    return memory


def from_sm2(fsrs: FSRSScheduler, easiness: float, interval_days: int, last_day: date) -> Memory:
    """A memory state for a card with no usable history, from its SM-2 ease and interval.

    Anki's rule (fsrs-rs ``memory_state_from_sm2``, SM-2 assumed to hold 90 % retention): stability
    is the day count at which recall falls to 90 %, so the interval itself; difficulty is what makes
    FSRS's recall-stability growth at that retention equal SM-2's ease.
    """
    w = fsrs.parameters
    retention = 0.9
    factor = retention ** (1 / -w[20]) - 1
    stability = max(float(interval_days), STABILITY_MIN) * fsrs._FACTOR / factor
    growth = math.exp(w[8]) * stability ** -w[9] * math.expm1((1 - retention) * w[10])
    difficulty = min(max(11 - (easiness - 1) / growth, MIN_DIFFICULTY), MAX_DIFFICULTY)
    return Memory(stability, difficulty, last_day)


def spread_backlog(due: Sequence[tuple[object, date, float]], today: date) -> dict[object, date]:
    """New due days for the cards a switch makes overdue, spread over at most ``MAX_SPREAD_DAYS`` days.

    ``due`` holds ``(key, due day under FSRS, retrievability today)``. Cards due after today keep
    their day; the overdue ones are dealt out evenly from today, the least likely to be recalled first.
    """
    overdue = sorted((item for item in due if item[1] <= today), key=lambda item: (item[2], item[1]))
    per_day = math.ceil(len(overdue) / MAX_SPREAD_DAYS) if overdue else 1
    placed = {key: today + timedelta(days=index // per_day) for index, (key, _, _) in enumerate(overdue)}
    placed.update({key: day for key, day, _ in due if day > today})
    return placed


__all__ = [
    "DEFAULT_RETENTION",
    "Memory",
    "from_history",
    "from_sm2",
    "interval",
    "noon_utc",
    "rating_for_quality",
    "retrievability",
    "review",
    "scheduler",
    "spread_backlog",
]
