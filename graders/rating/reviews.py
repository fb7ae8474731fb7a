"""A drill in the daily review: its current review (seed, attempts, reference), and how it gets rated.

A drill card is rated by the grader, never by buttons: the review (``DrillReview``) ends

1. when a ``submit`` submission is accepted: ``rate_accepted`` rates the card 5 / 4 / 3 by attempts,
   or 2 (a failed recall) after the reference was viewed (``graders.rating.quality``), in the
   transaction that records the verdict;
2. when the learner moves on after a final non-accepted verdict: rated by that verdict (2, 1 or 0);
3. when the learner gives up: rated 0.

Each hint the learner opens (``open_hint``) caps an acceptance: one at 4, two or more at 3.

Wrong answers alone never rate the card (a LeetCode learner keeps trying; an Anki learner rates
once per review), so the learner decides when a failing review ends. A rating below 3 puts the
card back into today's queue (SM-2 step 7), and coming back opens a new review with a fresh seed.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import datetime, time

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.utils import timezone

from cards.models import Card, CardState, Profile
from cards.review import Outcome, get_profile, learner_today, record_graded
from fastpath import card_states, drill_reviews
from graders.models import Drill, DrillReview, Submission
from graders.rating.quality import GAVE_UP, DrillResult, accepted_quality, drill_quality
from jobs.status import Status

logger = logging.getLogger(__name__)
REFERENCE_AFTER_FAILURES = 3


def new_seed() -> int:
    """48 random bits: a fresh instance of the hidden cases (fits a JSON number and a bigint)."""
    return int.from_bytes(os.urandom(6), "big")


def came_due_at(state: CardState | None, profile: Profile, now: datetime) -> datetime | None:
    """When the drill card last came due, or None when it is new or not due yet (practice).

    A same-day repeat (rated below 4 today) came due when it was rated; otherwise the card came
    due when the learner's day ``state.due`` started (``day_start_hour`` in their zone).
    """
    if state is None or state.last_reviewed_at is None:
        return None
    if state.needs_repeat and state.last_review_day == learner_today(profile, now):
        return state.last_reviewed_at
    start = datetime.combine(state.due, time(profile.day_start_hour), tzinfo=profile.zone)
    return start if start <= now else None


@dataclass(frozen=True)
class DrillSession:
    review: DrillReview
    state: CardState | None


def current_review(user: AbstractBaseUser, drill: Drill, now: datetime | None = None) -> DrillSession:
    """The learner's review of ``drill``, opened when needed: for the POSTs that act on it (submit, give up,
    move on, reference). The latest one, unless the card came due after it started."""
    now = now or timezone.now()
    review, state = _current(user, drill, now)
    return DrillSession(review if review is not None else _open_review(user, drill, now), state)


def _current(user: AbstractBaseUser, drill: Drill, now: datetime) -> tuple[DrillReview | None, CardState | None]:
    """The review still current (None when the next submission opens a new one), and the card's state. Reads."""
    state = card_states.OF_CARD.first(user_id=user.pk, card_id=drill.card_id)
    latest = drill_reviews.LATEST.first(user_id=user.pk, drill_id=drill.pk)
    due_since = came_due_at(state, get_profile(user), now)
    if latest is not None and (due_since is None or latest.started_at >= due_since):
        return latest, state
    return None, state


@dataclass(frozen=True)
class DrillPage:
    """Everything the drill page shows of the learner's review, read once and never written (a GET).

    Where no review is current, ``review`` is None: the first submission opens one (a POST), and until then
    the page shows an open review with no attempts. ``latest`` is the review's newest submission (examples
    runs included); ``last`` the learner's newest submission of this drill from any review (the editor starts
    from its code).
    """

    review: DrillReview | None
    state: CardState | None
    progress: ReviewProgress
    latest: Submission | None
    last: Submission | None
    reference_available: bool


def read_page(user: AbstractBaseUser, drill: Drill, now: datetime | None = None) -> DrillPage:
    """The drill page's domain in three to five reads: state, latest review, the review's submissions (one
    query gives both the progress and the newest), and the newest code of earlier reviews when this has none."""
    now = now or timezone.now()
    review, state = _current(user, drill, now)
    rows = list(review_submissions(review)) if review is not None else []
    progress = _progress(rows)
    latest = rows[0] if rows else None
    last = latest or Submission.objects.history(user.pk, drill.pk).only("code", "queued_at").first()
    return DrillPage(review, state, progress, latest, last, reference_available(review, progress))


def _open_review(user: AbstractBaseUser, drill: Drill, now: datetime) -> DrillReview:
    """Expire an open review left from before the card came due, and open a new one (one wins a race)."""
    with transaction.atomic():
        open_reviews = DrillReview.objects.filter(user=user, drill=drill, finished_at__isnull=True)
        open_reviews.update(finished_at=now, outcome=DrillReview.Outcome.EXPIRED)
        try:
            with transaction.atomic():
                return DrillReview.objects.create(user=user, drill=drill, seed=new_seed(), started_at=now)
        except IntegrityError:
            pass
    return DrillReview.objects.filter(user=user, drill=drill, finished_at__isnull=True).get()


def review_submissions(review: DrillReview) -> QuerySet[Submission]:
    """Every submission made during the review: they share its seed (newest first)."""
    return Submission.objects.history(review.user_id, review.drill_id).filter(seed=review.seed)


def review_attempts(review: DrillReview) -> QuerySet[Submission]:
    """The attempts: ``submit`` submissions, less those our grader failed on (never the learner's fault)."""
    return review_submissions(review).filter(kind=Submission.Kind.SUBMIT).exclude(status=Status.INTERNAL_ERROR)


def review_for(submission: Submission) -> DrillReview | None:
    return DrillReview.objects.filter(
        user_id=submission.user_id, drill_id=submission.drill_id, seed=submission.seed
    ).first()


@dataclass(frozen=True)
class ReviewProgress:
    attempts: int
    failures: int
    accepted: bool
    last_final: Submission | None  # the newest final attempt

    @property
    def can_move_on(self) -> bool:
        return self.last_final is not None and not self.accepted


def review_progress(review: DrillReview) -> ReviewProgress:
    """Counts for the drill page, in one query over the review's (few) attempts."""
    return _progress(list(review_attempts(review).only("pk", "status", "verdict", "kind", "queued_at")))


def _progress(rows: list[Submission]) -> ReviewProgress:
    """From a review's submissions, newest first: its attempts (``review_attempts``' rule) and their finals."""
    attempts = [r for r in rows if r.kind == Submission.Kind.SUBMIT and r.status != Status.INTERNAL_ERROR]
    finals = [row for row in attempts if row.is_final]
    return ReviewProgress(
        attempts=len(attempts),
        failures=sum(row.status != Status.ACCEPTED for row in finals),
        accepted=any(row.status == Status.ACCEPTED for row in finals),
        last_final=finals[0] if finals else None,
    )


def reference_available(review: DrillReview | None, progress: ReviewProgress) -> bool:
    """After an accepted submission, or after three failed ones (and once seen, it stays). No review yet: no."""
    return review is not None and (
        review.reference_viewed_at is not None
        or progress.accepted
        or progress.failures >= REFERENCE_AFTER_FAILURES
        or review.outcome == DrillReview.Outcome.ACCEPTED
    )


def view_reference(review: DrillReview, now: datetime) -> None:
    """Remember the first look: an acceptance after it is rated 2, a failed recall."""
    DrillReview.objects.filter(pk=review.pk, reference_viewed_at__isnull=True).update(reference_viewed_at=now)


def shown_hints(review: DrillReview | None, available: int) -> int:
    """How many of the drill's hints the learner sees: those the review opened, or every one once it is rated
    (nothing is left to cap, as with the reference after an acceptance)."""
    if review is not None and not review.is_open:
        return available
    return min(review.hints_opened if review is not None else 0, available)


def open_hint(review: DrillReview, available: int) -> bool:
    """Open the open review's next hint, if the drill has one more (a conditional update: a double click opens one).

    Recorded on the review, so an acceptance after it is capped (``graders.rating.quality.hint_cap``). A rated
    review records nothing: its rating is final, and the drill page shows it every hint.
    """
    changed = DrillReview.objects.filter(pk=review.pk, finished_at__isnull=True, hints_opened__lt=available).update(
        hints_opened=F("hints_opened") + 1
    )
    return changed == 1


def finish(review: DrillReview, card: Card, outcome: str, quality: int, now: datetime) -> Outcome | None:
    """End the review once (a conditional update) and record its quality as a ``grader`` review.

    None when another request or worker finished it first. The card's review is recorded only if
    it is in the learner's queue; a drill practised while not due is graded but rates nothing.
    """
    with transaction.atomic():
        changed = DrillReview.objects.filter(pk=review.pk, finished_at__isnull=True).update(
            finished_at=now, outcome=outcome, quality=quality
        )
        if changed != 1:
            return None
        return record_graded(review.user, card, quality, now)


def give_up(review: DrillReview, card: Card, now: datetime) -> Outcome | None:
    return finish(review, card, DrillReview.Outcome.GAVE_UP, GAVE_UP, now)


def move_on(review: DrillReview, card: Card, now: datetime) -> Outcome | None:
    """End a review whose last final attempt was not accepted, rated by that verdict (2, 1 or 0)."""
    quality = move_on_quality(review, review_progress(review))
    if quality is None:
        return None
    return finish(review, card, DrillReview.Outcome.MOVED_ON, quality, now)


def move_on_quality(review: DrillReview, progress: ReviewProgress) -> int | None:
    """What moving on would rate an open review whose last final attempt failed; None when it cannot."""
    last = progress.last_final
    if not review.is_open or not progress.can_move_on or last is None:
        return None
    result = DrillResult(
        status=last.status,
        attempts=progress.attempts,
        hidden_passed=int((last.verdict or {}).get("hidden_passed", 0)),
        reference_viewed=review.reference_viewed_at is not None,
        hints_opened=review.hints_opened,
    )
    return drill_quality(result)


def rate_accepted(sub: Submission, now: datetime) -> Outcome | None:
    """Rate the drill card 5, 4 or 3 for an accepted attempt (2 after the reference), if its review is still open.

    Called where the verdict is recorded, inside its transaction. The open review is looked up first
    (one indexed query): a drill practised outside the review queue, or accepted again after its
    review ended, costs nothing more.
    """
    review = drill_reviews.OPEN.first(user_id=sub.user_id, drill_id=sub.drill_id, seed=sub.seed)
    if review is None:
        return None
    attempts = review_attempts(review).filter(pk__lte=sub.pk).count()
    quality = accepted_quality(max(attempts, 1), review.reference_viewed_at is not None, review.hints_opened)
    outcome = finish(review, sub.drill.card, DrillReview.Outcome.ACCEPTED, quality, now)
    logger.info("drill %s for user %s accepted: quality %s, %s", sub.drill.slug, sub.user_id, quality, outcome)
    return outcome


def solutions_unlocked(user: AbstractBaseUser, drill: Drill) -> bool:
    """Others' solutions open once the learner has solved the drill (an accepted attempt, in any review) or has
    stopped trying to recall it (gave up, or looked at the reference: both a failed recall). One query."""
    return drill.pk in solutions_unlocked_among(user, [drill])


def solutions_unlocked_among(user: AbstractBaseUser, drills: list[Drill]) -> set[int]:
    """The pks of those of ``drills`` whose solutions the learner has unlocked (``solutions_unlocked``), in one
    query however many drills (an Anki export asks for all of a deck's at once)."""
    accepted = Submission.objects.filter(
        user=user, drill=OuterRef("pk"), status=Status.ACCEPTED, kind=Submission.Kind.SUBMIT
    )
    past_recall = DrillReview.objects.filter(user=user, drill=OuterRef("pk")).filter(
        Q(reference_viewed_at__isnull=False) | Q(outcome=DrillReview.Outcome.GAVE_UP)
    )
    unlocked = Drill.objects.filter(pk__in=[drill.pk for drill in drills])
    return set(unlocked.filter(Exists(accepted) | Exists(past_recall)).values_list("pk", flat=True))
