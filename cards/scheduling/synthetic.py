"""Synthetic learners with known true FSRS-6 parameters: review logs to test fits and scores against.

Why: whether a fit helps can only be judged where the truth is known. A synthetic learner remembers
by FSRS-6 with parameters of its own (``truth``); the cards are scheduled by FSRS at the package's
default parameters (what a learner without a fit gets), and each review's outcome is drawn from the
true model's retrievability. A recalled card is rated Hard, Good or Easy (15 / 75 / 10 %); a new
card's first rating is drawn from Again, Hard, Good, Easy (1 / 1 / 3 / 1 in 6).

Used by the fit's tests (``tests/test_fsrs_fit.py``) and ``bench/scheduler.py --fits``. Pure: no
Django, no clock; one ``random.Random(seed)`` makes the whole log.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from datetime import date, timedelta

from fsrs.scheduler import DEFAULT_PARAMETERS, LOWER_BOUNDS_PARAMETERS, UPPER_BOUNDS_PARAMETERS

from cards.scheduling import evaluate, fsrs6

START = date(2026, 1, 5)
QUALITY = {1: 1, 2: 3, 3: 4, 4: 5}  # FSRS rating -> the project's SM-2 quality


def clipped(w: Sequence[float]) -> tuple[float, ...]:
    bounds = zip(w, LOWER_BOUNDS_PARAMETERS, UPPER_BOUNDS_PARAMETERS, strict=True)
    return tuple(min(max(v, lo), hi) for v, lo, hi in bounds)


def distinct_parameters(scale: float = 0.3, growth: float = -0.8) -> tuple[float, ...]:
    """A learner clearly unlike the defaults: a fast forgetter, initial stabilities times ``scale`` and the
    recall-growth exponent ``w[8]`` moved by ``growth`` (true retention about 0.83 where FSRS expects 0.9)."""
    w = list(DEFAULT_PARAMETERS)
    for k in range(4):
        w[k] *= scale
    w[8] += growth
    return clipped(w)


def drawn_parameters(rng: random.Random, spread: float = 0.4) -> tuple[float, ...]:
    """The defaults with initial stabilities and recall growth scaled log-normally (bench's learners)."""
    w = list(DEFAULT_PARAMETERS)
    scale = math.exp(rng.gauss(0, spread))
    for k in range(4):
        w[k] *= scale
    w[8] *= math.exp(rng.gauss(0, spread / 2))
    return clipped(w)


def rating(rng: random.Random, recalled: bool) -> int:
    if not recalled:
        return 1
    draw = rng.random()
    return 2 if draw < 0.15 else 3 if draw < 0.90 else 4


def learner_log(
    truth: Sequence[float],
    seed: int,
    days: int = 120,
    new_per_day: int = 10,
    desired_retention: float = 0.9,
    switch: tuple[int, Sequence[float] | None] | None = None,
) -> list[evaluate.Review]:
    """``days`` days of one synthetic learner: each day the due cards, then ``new_per_day`` new ones.

    The log is in review order (day by day, due cards first), as ``cards.calibrating.reviews_of`` reads one.
    ``switch``: (day offset, parameters): from that day the cards are scheduled with those parameters (a kept
    fit), each card's memory replayed from its history (``fsrs6.from_history``) and its due day left as it was.
    The days before it are the same log as without it.
    """
    rng = random.Random(seed)
    true_fsrs = fsrs6.scheduler(tuple(truth))
    used = fsrs6.scheduler(None, desired_retention)
    true_memory: dict[int, fsrs6.Memory] = {}
    memory: dict[int, fsrs6.Memory] = {}
    history: dict[int, list[tuple[date, int]]] = {}
    due: dict[int, date] = {}
    log: list[evaluate.Review] = []
    next_new = 0
    for offset in range(days):
        today = START + timedelta(days=offset)
        if switch is not None and offset == switch[0]:
            used = fsrs6.scheduler(switch[1], desired_retention)
            for card, reviews in history.items():
                found = fsrs6.from_history(used, reviews)
                if found is not None:
                    memory[card] = found
        todays = sorted((card for card, day in due.items() if day <= today), key=lambda c: (due[c], c))
        todays += range(next_new, next_new + new_per_day)
        next_new += new_per_day
        for card in todays:
            if card in true_memory:
                grade = rating(rng, rng.random() < fsrs6.retrievability(true_fsrs, true_memory[card], today))
            else:
                grade = rng.choice((1, 2, 3, 3, 3, 4))
            log.append(evaluate.Review(card_id=str(card), day=(today - fsrs6.EPOCH).days, rating=grade))
            true_memory[card], _ = fsrs6.review(true_fsrs, true_memory.get(card), QUALITY[grade], today)
            memory[card], interval = fsrs6.review(used, memory.get(card), QUALITY[grade], today)
            history.setdefault(card, []).append((today, QUALITY[grade]))
            due[card] = today + timedelta(days=max(1, interval))
    return log


__all__ = ["distinct_parameters", "drawn_parameters", "learner_log"]
