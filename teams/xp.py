"""XP and board ordering: every rule that turns learning into points lives here, and only here.

XP is always *derived* from the source of truth (``cards.ReviewLog`` and ``graders.Submission``);
the daily rollup and the Redis boards are caches that ``rebuild_boards`` can recompute.

The rules (docs/teams.md repeats them for learners):

1. A review rated Good or Easy (SM-2 quality >= 4) earns ``REVIEW_XP`` (1 point).
2. A same-day repeat (a card coming back in the same session after Again/Hard) earns nothing,
   and a learner earns XP from one card at most once per learner day, however often it is shown.
3. Only the learner's own answers count: their ratings and their typed answers to output cards (the
   site checks the answer, the learner gave it). A grader-made review of a drill card earns no review XP,
   because the drill already pays through rules 4 and 5 (no double counting). Only shared cards count:
   a review of the learner's own private import (``Note.owner``) earns nothing and is no review on the
   boards, since the learner wrote both the question and the answer (400 XP in 3 s otherwise).
4. The first accepted submission of a drill earns ``DRILL_ACCEPTED_XP`` (10 points), once per drill ever.
5. If that accepted submission was the learner's very first real submission of the drill,
   ``DRILL_FIRST_TRY_BONUS`` (5 more). "Run examples" never earns and never spends the first try.

Board order: ``score = xp * (0.5 + 0.5 * retention)``, where retention is the learner's *true
retention*: the share of mature-card reviews (interval before the review >= 21 days, not a same-day
repeat) that passed (quality >= 3). With fewer than ``MIN_MATURE_REVIEWS`` mature reviews the
retention is taken as ``NEUTRAL_RETENTION``, so a newcomer is neither punished nor boosted.
Ties are broken by XP, then by the earliest join, then by the smallest user id: always a total order.

This module imports nothing from Django so that the rules can be tested without a database.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime

REVIEW_XP = 1
GOOD_QUALITY = 4
DRILL_ACCEPTED_XP = 10
DRILL_FIRST_TRY_BONUS = 5

MATURE_INTERVAL_DAYS = 21
PASS_QUALITY = 3
MIN_MATURE_REVIEWS = 10
NEUTRAL_RETENTION = 0.85

SOURCE_SELF = "self"
SOURCE_OUTPUT = "output"  # a typed answer to an output card: the learner's own, checked by the site
OWN_SOURCES = frozenset({SOURCE_SELF, SOURCE_OUTPUT})
KIND_SUBMIT = "submit"


@dataclass(frozen=True)
class ReviewFact:
    """One ReviewLog row, reduced to what the rules read."""

    card_id: int
    day: date
    quality: int
    interval_before: int = 0
    same_day_repeat: bool = False
    source: str = SOURCE_SELF
    shared: bool = True  # False: a card of the learner's own private import


@dataclass(frozen=True)
class SubmissionFact:
    """One Submission row. ``kind`` is ``submit`` or ``examples``; ``at`` is when it was graded (the XP's day).

    Attempts are ordered by ``sent_at``, when the learner sent them (``at`` when absent), as the drill
    page and the hub count them: a slow wrong answer sent first is still the first try.
    """

    drill_id: int
    at: datetime
    kind: str
    accepted: bool
    submission_id: int = 0
    sent_at: datetime | None = None

    @property
    def order(self) -> tuple[datetime, int]:
        return (self.sent_at or self.at, self.submission_id)


@dataclass(frozen=True)
class DrillAward:
    """XP earned by one drill: on which submission, how much, and whether it was the first try."""

    drill_id: int
    submission_id: int
    at: datetime
    xp: int
    first_try: bool


@dataclass(frozen=True)
class ReviewTotals:
    """What a run of reviews adds to a board row."""

    xp: int = 0
    reviews: int = 0
    mature_reviews: int = 0
    mature_passed: int = 0


def review_totals(reviews: Iterable[ReviewFact]) -> ReviewTotals:
    """Apply rules 1-3 and count the retention inputs.

    ``reviews`` counts the learner's own non-repeat reviews (cards studied, not button presses), typed
    output answers included, which is also what true retention is measured on.
    """
    earned: set[tuple[int, date]] = set()
    counted = mature = passed = 0
    for fact in reviews:
        if fact.same_day_repeat or fact.source not in OWN_SOURCES or not fact.shared:
            continue
        counted += 1
        if fact.interval_before >= MATURE_INTERVAL_DAYS:
            mature += 1
            passed += fact.quality >= PASS_QUALITY
        if fact.quality >= GOOD_QUALITY:
            earned.add((fact.card_id, fact.day))
    return ReviewTotals(xp=REVIEW_XP * len(earned), reviews=counted, mature_reviews=mature, mature_passed=passed)


def drill_awards(submissions: Iterable[SubmissionFact]) -> list[DrillAward]:
    """Apply rules 4 and 5 to all of one learner's submissions (any order, any drills).

    The whole history is needed because "first accepted" and "first try" look backwards in time.
    """
    by_drill: dict[int, list[SubmissionFact]] = {}
    for fact in submissions:
        if fact.kind == KIND_SUBMIT:
            by_drill.setdefault(fact.drill_id, []).append(fact)
    awards = []
    for drill_id, attempts in by_drill.items():
        attempts.sort(key=lambda s: s.order)
        for position, attempt in enumerate(attempts):
            if attempt.accepted:
                first_try = position == 0
                xp = DRILL_ACCEPTED_XP + (DRILL_FIRST_TRY_BONUS if first_try else 0)
                awards.append(DrillAward(drill_id, attempt.submission_id, attempt.at, xp, first_try))
                break
    return sorted(awards, key=lambda a: (a.at, a.drill_id))


def true_retention(mature_reviews: int, mature_passed: int) -> float | None:
    """The measured retention, or None when there are too few mature reviews to trust it."""
    if mature_reviews < MIN_MATURE_REVIEWS:
        return None
    return mature_passed / mature_reviews


def board_score(xp: int, mature_reviews: int, mature_passed: int) -> float:
    """XP weighted by retention: a learner who remembers what they review ranks above one who clicks."""
    retention = true_retention(mature_reviews, mature_passed)
    weight = 0.5 + 0.5 * (NEUTRAL_RETENTION if retention is None else retention)
    return round(xp * weight, 4)


def rank_key(score: float, xp: int, joined_ts: float, user_id: int) -> tuple[float, int, float, int]:
    """Sort key for ``sorted``: score desc, XP desc, earliest join, smallest user id."""
    return (-score, -xp, joined_ts, user_id)
