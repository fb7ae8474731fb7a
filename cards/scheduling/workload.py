"""How many reviews a day a desired retention would cost, simulated on a learner's own cards.

Why: a retention target is only meaningful next to its price (Anki's "help me decide"). Each
retention replays the next days from the learner's real memory states: every day the due cards are
answered (recalled with FSRS's own predicted probability, then Hard / Good / Easy in a fixed mix,
a failure coming back once more that day), then new cards up to the daily limit. The generator is
seeded, so the same cards give the same table.

Pure: no Django, no clock.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from cards.scheduling import fsrs6

RETENTIONS = (0.80, 0.85, 0.90, 0.95)
DAYS = 30
# Of recalled answers: Hard, Good, Easy (Anki's simulator's default mix, rounded).
RECALLED_MIX = ((2, 0.15), (3, 0.75), (4, 0.10))
QUALITY = {1: 1, 2: 3, 3: 4, 4: 5}


@dataclass(frozen=True)
class SimCard:
    """A seen card: its FSRS memory (due when recall falls to the retention simulated), or, with no
    memory (seen but never reviewed, a leech's drill), the day it is due as a new card."""

    memory: fsrs6.Memory | None
    due: date | None = None


@dataclass(frozen=True)
class Workload:
    retention: float
    per_day: list[int]

    @property
    def average(self) -> float:
        return sum(self.per_day) / len(self.per_day) if self.per_day else 0.0

    @property
    def peak(self) -> int:
        return max(self.per_day, default=0)


def _rating(rng: random.Random, recalled: bool) -> int:
    if not recalled:
        return 1
    draw, total = rng.random(), 0.0
    for rating, share in RECALLED_MIX:
        total += share
        if draw < total:
            return rating
    return RECALLED_MIX[-1][0]


def _first_due(fsrs: fsrs6.Engine, card: SimCard, today: date) -> date:
    if card.memory is None:
        return card.due or today
    return max(today, card.memory.last_day + timedelta(days=fsrs6.interval(fsrs, card.memory.stability)))


def simulate(
    cards: Sequence[SimCard],
    new_cards: int,
    new_per_day: int,
    today: date,
    retention: float,
    parameters: Sequence[float] | None = None,
    days: int = DAYS,
    seed: int = 0,
) -> Workload:
    """Reviews on each of the next ``days`` days (today first) at ``retention``."""
    fsrs = fsrs6.scheduler(parameters, retention)
    rng = random.Random(seed)
    memories = [card.memory for card in cards]
    due = [_first_due(fsrs, card, today) for card in cards]
    waiting = new_cards
    per_day = []
    for offset in range(days):
        day = today + timedelta(days=offset)
        fresh = min(new_per_day, waiting)
        waiting -= fresh
        memories.extend([None] * fresh)
        due.extend([day] * fresh)
        count = 0
        for index in [i for i, d in enumerate(due) if d <= day]:
            memory = memories[index]
            recalled = memory is not None and rng.random() < fsrs6.retrievability(fsrs, memory, day)
            rating = _rating(rng, recalled) if memory is not None else rng.choice((1, 3, 3, 3))
            memory, interval = fsrs6.review(fsrs, memory, QUALITY[rating], day)
            count += 1
            if rating == 1:  # back once more today, rated Good
                memory, interval = fsrs6.review(fsrs, memory, QUALITY[3], day)
                count += 1
            memories[index], due[index] = memory, day + timedelta(days=interval)
        per_day.append(count)
    return Workload(retention=retention, per_day=per_day)


def compare(
    cards: Sequence[SimCard],
    new_cards: int,
    new_per_day: int,
    today: date,
    parameters: Sequence[float] | None = None,
    retentions: Sequence[float] = RETENTIONS,
) -> list[Workload]:
    return [simulate(cards, new_cards, new_per_day, today, r, parameters) for r in retentions]


__all__ = ["DAYS", "RETENTIONS", "SimCard", "Workload", "compare", "simulate"]
