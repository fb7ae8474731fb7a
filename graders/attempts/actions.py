"""Each action on a learner's attempt at a drill, as one function that answers a frozen read model.

The drill pages (``graders.web.views``) and the API (``api.grader_views``) call these and render what they
answer; neither reads or writes a review itself. The rules live below, in ``graders.rating.reviews`` (the
review, its rating) and ``graders.attempts.submissions`` (the one submit path); this module puts them
together per action and reads back what the learner sees:

- ``page``: the drill page's view of the current review (a GET: reads only, opens nothing);
- ``status``: a submission with its review (the verdict fragment and page);
- ``submit``: store and queue a submission (optionally waiting for its verdict, and reading its status back);
- ``open_hint``, ``view_reference``, ``give_up``, ``move_on``: the POSTs that act on the current review.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from cards.models import CardState
from graders.attempts import submissions
from graders.attempts.submissions import Refused
from graders.drills.schema import Hint
from graders.models import Drill, DrillReview, Submission
from graders.rating import reviews
from graders.rating.quality import GAVE_UP, hint_cap


@dataclass(frozen=True)
class ReviewView:
    """The learner's review of a drill as it is shown. ``opened`` False: none is current yet (the next submission
    opens one), and it reads as an open review with no hint opened and the reference unseen."""

    opened: bool
    is_open: bool
    outcome: str
    quality: int | None
    hints_opened: int
    reference_viewed_at: datetime | None

    @classmethod
    def of(cls, review: DrillReview | None) -> ReviewView:
        if review is None:
            return cls(False, True, "", None, 0, None)
        return cls(
            True, review.is_open, review.outcome, review.quality, review.hints_opened, review.reference_viewed_at
        )


@dataclass(frozen=True)
class ReviewSummary:
    """Where the review stands: what the drill's actions (reference, give up, move on, next card) follow."""

    review: ReviewView | None  # None: the submission's review is gone
    state: CardState | None
    progress: reviews.ReviewProgress | None
    reference_available: bool
    move_on_quality: int | None  # what moving on would rate the review; None when it cannot


@dataclass(frozen=True)
class Hints:
    """The hints the learner sees (those the review opened; all of them once it is rated)."""

    shown: tuple[Hint, ...]
    total: int
    rating_cap: int  # the best rating an acceptance can still get for the hints opened

    @property
    def next_hint(self) -> int | None:
        return len(self.shown) + 1 if len(self.shown) < self.total else None

    @property
    def next_hint_cap(self) -> int:
        return hint_cap(len(self.shown) + 1)


@dataclass(frozen=True)
class AttemptStatus:
    """A submission and its review: ``verdict_hints`` are those the review was rated with (once final)."""

    submission: Submission
    summary: ReviewSummary
    verdict_hints: tuple[Hint, ...]


@dataclass(frozen=True)
class AttemptPage:
    """The drill page's read of the learner's current review. ``latest``: its newest submission (examples runs
    included) with its status; ``last``: the learner's newest submission of the drill from any review."""

    summary: ReviewSummary
    hints: Hints
    latest: AttemptStatus | None
    last: Submission | None

    @property
    def review(self) -> ReviewView:
        assert self.summary.review is not None  # the page's review is always shown (``ReviewView.of(None)``)
        return self.summary.review


@dataclass(frozen=True)
class Submitted:
    submission: Submission
    status: AttemptStatus | None  # read back when asked (the page's answer with the verdict); else None


@dataclass(frozen=True)
class Ended:
    """A review the action ended, and the quality it was rated (recorded on the card if it was due)."""

    quality: int


def _summary(
    review: DrillReview | None, state: CardState | None, progress: reviews.ReviewProgress | None, *, page: bool = False
) -> ReviewSummary:
    available = bool(progress is not None and reviews.reference_available(review, progress))
    move_on = reviews.move_on_quality(review, progress) if review is not None and progress is not None else None
    shown = ReviewView.of(review) if review is not None or page else None
    return ReviewSummary(shown, state, progress, available, move_on)


def _hints(hints: tuple[Hint, ...], review: DrillReview | None) -> Hints:
    shown = reviews.shown_hints(review, len(hints))
    return Hints(hints[:shown], len(hints), hint_cap(review.hints_opened if review is not None else 0))


def _status(
    sub: Submission,
    review: DrillReview | None,
    state: CardState | None,
    progress: reviews.ReviewProgress | None = None,
) -> AttemptStatus:
    if review is not None and review.seed != sub.seed:
        review, progress = reviews.review_for(sub), None
    if progress is None and review is not None:
        progress = reviews.review_progress(review)
    verdict_hints = sub.drill.spec.hints[: review.hints_opened] if review is not None and sub.is_final else ()
    return AttemptStatus(sub, _summary(review, state, progress), verdict_hints)


def page(user: AbstractBaseUser, drill: Drill) -> AttemptPage:
    """The drill page: the review read once (``reviews.read_page``), nothing written."""
    read = reviews.read_page(user, drill)
    latest = _status(read.latest, read.review, read.state, read.progress) if read.latest is not None else None
    summary = _summary(read.review, read.state, read.progress, page=True)
    return AttemptPage(summary, _hints(drill.spec.hints, read.review), latest, read.last)


def status(user: AbstractBaseUser, sub: Submission) -> AttemptStatus:
    """One of the learner's submissions with its review and the card's state."""
    review = reviews.review_for(sub)
    state = CardState.objects.filter(user=user, card_id=sub.drill.card_id).first()
    return _status(sub, review, state)


def submit(
    user: AbstractBaseUser,
    drill: Drill,
    code: str,
    kind: str = Submission.Kind.SUBMIT,
    *,
    wait: bool = False,
    read_back: bool = False,
) -> Submitted | Refused:
    """Store a submission and queue it (``submissions.submit``), or refuse. ``wait``: for the verdict, a bounded
    time (``submissions.wait_for_verdict``); ``read_back``: with its status, as ``status`` reads it."""
    sub = submissions.submit(user, drill, code, kind)
    if isinstance(sub, Refused):
        return sub
    if wait:
        sub = submissions.wait_for_verdict(sub)
    return Submitted(sub, status(user, sub) if read_back else None)


def open_hint(user: AbstractBaseUser, drill: Drill) -> Hints:
    """Open the current review's next hint (none once every one is open or the review is rated)."""
    review = reviews.current_review(user, drill).review
    reviews.open_hint(review, len(drill.spec.hints))
    review.refresh_from_db(fields=["hints_opened", "finished_at"])
    return _hints(drill.spec.hints, review)


def view_reference(user: AbstractBaseUser, drill: Drill) -> bool:
    """Show the reference if it is unlocked (False: still locked); the first look rates an acceptance 2."""
    review = reviews.current_review(user, drill).review
    if not reviews.reference_available(review, reviews.review_progress(review)):
        return False
    reviews.view_reference(review, timezone.now())
    return True


def give_up(user: AbstractBaseUser, drill: Drill) -> Ended | None:
    """Rate the current review 0; None when it was rated already."""
    review = reviews.current_review(user, drill).review
    if reviews.give_up(review, drill.card, timezone.now()) is None:
        return None
    return Ended(GAVE_UP)


def move_on(user: AbstractBaseUser, drill: Drill) -> Ended | None:
    """End a failing review with its last verdict's quality; None when there is nothing to rate."""
    review = reviews.current_review(user, drill).review
    if reviews.move_on(review, drill.card, timezone.now()) is None:
        return None
    review.refresh_from_db(fields=["quality"])
    assert review.quality is not None
    return Ended(review.quality)
