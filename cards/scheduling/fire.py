"""FIRe-style implicit credit: a passed drill counts as a fraction of a review of the cards it builds on.

Math Academy's Fractional Implicit Repetition: practising an advanced skill exercises the simpler skills
inside it, so a success there is partial evidence that they are still remembered. Here a drill that needs
concept X (``cards.ingest.concepts``), passed (rated Good or Easy by its verdict), credits every card the
learner has already reviewed that teaches X with ``weight`` of a Good review, discounted because the drill
tests X only in passing:

- the memory's stability moves ``weight`` of the way to what a Good review today would give it;
- its last review moves ``weight`` of the way from when it was to today;
- the card's difficulty is left alone (the drill says nothing about how hard the card itself is).

At ``weight`` 0 nothing changes; at 1 it is exactly a Good review (FSRS's own update, the ``fsrs`` package's
arithmetic), so the credit never leaves FSRS's model. The card is then due when FSRS's predicted recall of
the credited memory falls to the desired retention (never today). Never logged as a review: the card's
review history, its calibration and its fit see only real answers.

Pure: no Django, no clock.
"""

from __future__ import annotations

from datetime import date, timedelta

from cards.scheduling import fsrs6

WEIGHT = 0.25  # a quarter of a Good review per passed drill (see docs/scheduling.md, "Drills credit cards")
CARDS = 4  # cards credited per passed drill: those due soonest (bench/scheduler.py --fire simulates four)
GOOD = 4  # SM-2 quality of Good, which FSRS reads as its Good


def credit(fsrs: fsrs6.Engine, memory: fsrs6.Memory, today: date, weight: float = WEIGHT) -> tuple[fsrs6.Memory, int]:
    """The credited memory and the days until it is due (at least 1). A card reviewed today is left as it is.

    The credited memory keeps the card's real last review (the review flow stores no made-up dates): its
    stability is the one that, counted from that review, reaches the desired retention on the credited due
    day, so FSRS's prediction on that day is the desired retention, as for any other card."""
    if not 0 <= weight <= 1:
        raise ValueError(f"a credit's weight is between 0 and 1, not {weight}")
    elapsed = (today - memory.last_day).days
    if elapsed <= 0 or weight == 0:
        due = memory.last_day + timedelta(days=fsrs6.interval(fsrs, memory.stability))
        return memory, max(1, (due - today).days)
    good, _ = fsrs6.review(fsrs, memory, GOOD, today)
    stability = memory.stability + weight * max(0.0, good.stability - memory.stability)
    anchor = today - timedelta(days=round((1 - weight) * elapsed))
    due = max(anchor + timedelta(days=fsrs6.interval(fsrs, stability)), today + timedelta(days=1))
    # FSRS's interval is linear in stability before rounding: scale it to reach ``due`` from the real review.
    stretched = stability * (due - memory.last_day).days / max(1, (due - anchor).days)
    return fsrs6.Memory(max(memory.stability, stretched), memory.difficulty, memory.last_day), (due - today).days


__all__ = ["CARDS", "WEIGHT", "credit"]
