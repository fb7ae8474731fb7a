"""Fuzz and load balancing, for either scheduler: which day inside the fuzz range a card comes back.

Why: cards learned together would otherwise come back together for ever, and a day's reviews pile
up. Inside the fuzz range (Anki's and the ``fsrs`` package's ranges: about ±15 % at a week, ±5 %
past twenty days) the card goes to the day with the fewest reviews already due, never to a day a
sibling (another card of its note section) is due when another day is free; among equally loaded
days the generator the caller passes picks one, so cards learned together drift apart.

Only the due day moves: SM-2 keeps its exact interval for its next ``ceil(I * EF)``, and FSRS keeps
its memory state. Pure: no Django, no clock, no global randomness.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping
from datetime import date, timedelta

# (start, end, factor): the fuzz delta grows by ``factor`` per day of interval inside each range.
FUZZ_RANGES = ((2.5, 7.0, 0.15), (7.0, 20.0, 0.1), (20.0, float("inf"), 0.05))
MIN_FUZZED_INTERVAL = 3


def fuzz_range(interval: int, maximum: int = 36500) -> tuple[int, int]:
    """The shortest and longest interval a card due in ``interval`` days may get (equal below 3 days)."""
    if interval < MIN_FUZZED_INTERVAL:
        return interval, interval
    delta = 1.0
    for start, end, factor in FUZZ_RANGES:
        delta += factor * max(min(float(interval), end) - start, 0.0)
    low = max(2, round(interval - delta))
    high = min(round(interval + delta), maximum)
    return min(low, high), high


def balanced_interval(
    interval: int,
    today: date,
    load: Mapping[date, int],
    sibling_days: Collection[date],
    rng: random.Random,
) -> int:
    """The interval inside the fuzz range whose day has the fewest cards due (``load``), avoiding
    ``sibling_days`` unless every day in the range has a sibling."""
    low, high = fuzz_range(interval)
    candidates = list(range(low, high + 1))
    free = [days for days in candidates if today + timedelta(days=days) not in sibling_days]
    candidates = free or candidates
    fewest = min(load.get(today + timedelta(days=days), 0) for days in candidates)
    return rng.choice([days for days in candidates if load.get(today + timedelta(days=days), 0) == fewest])


__all__ = ["balanced_interval", "fuzz_range"]
