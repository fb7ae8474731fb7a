"""The drill-attempt layer (``graders.attempts.actions``): each action on an attempt answers a frozen read model,
the same for the drill pages and the API (issue 40)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from graders.attempts import actions
from graders.attempts.submissions import Refused
from graders.models import Drill, DrillReview, Submission
from graders.rating import reviews
from graders.rating.quality import GAVE_UP
from jobs.status import Status
from tests.graders.conftest import RIGHT, drill_text, graded_submission

pytestmark = pytest.mark.django_db
HINTS = '\n[[hints]]\nen = "Add."\nzh = "加。"\n\n[[hints]]\nen = "One."\nzh = "一。"\n'


def test_the_page_shows_an_open_review_without_opening_one(learner: User, drill: Drill) -> None:
    page = actions.page(learner, drill)
    assert not DrillReview.objects.exists()  # no row, not even an unsaved stand-in handed to the page
    assert page.review == actions.ReviewView(False, True, "", None, 0, None)
    assert page.latest is None and page.last is None
    assert page.summary.progress is not None and page.summary.progress.attempts == 0
    assert not page.summary.reference_available and page.summary.move_on_quality is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        page.summary.reference_available = True  # type: ignore[misc]


def test_the_page_reads_the_current_review_and_its_latest_status(learner: User, drill: Drill) -> None:
    review = reviews.current_review(learner, drill).review
    sub = graded_submission(learner, drill, Status.WRONG_ANSWER, timezone.now())
    Submission.objects.filter(pk=sub.pk).update(seed=review.seed)
    page = actions.page(learner, drill)
    assert page.review.opened and page.review.is_open
    assert page.latest is not None and page.latest.submission.pk == sub.pk
    assert page.summary.move_on_quality is not None  # a failing final attempt: the learner may move on
    assert actions.status(learner, page.latest.submission).summary == page.summary


def test_submit_refuses_or_stores_and_reads_the_status_back(learner: User, drill: Drill) -> None:
    refused = actions.submit(learner, drill, "   ")
    assert isinstance(refused, Refused) and refused.status == 400 and not Submission.objects.exists()
    done = actions.submit(learner, drill, RIGHT, read_back=True)
    assert isinstance(done, actions.Submitted) and done.status is not None
    assert done.status.submission == done.submission and done.submission.status == Status.QUEUED
    assert done.status.summary.review is not None and done.status.summary.review.opened
    plain = actions.submit(learner, drill, RIGHT)
    assert isinstance(plain, actions.Submitted) and plain.status is None  # the API answers the row alone


def test_give_up_rates_the_review_once(learner: User, drill: Drill) -> None:
    assert actions.give_up(learner, drill) == actions.Ended(GAVE_UP)
    review = DrillReview.objects.get()
    assert review.outcome == DrillReview.Outcome.GAVE_UP and review.quality == GAVE_UP


def test_move_on_needs_a_final_failing_attempt_and_answers_its_rating(learner: User, drill: Drill) -> None:
    assert actions.move_on(learner, drill) is None  # nothing to rate yet
    review = DrillReview.objects.get()
    sub = graded_submission(learner, drill, Status.WRONG_ANSWER, timezone.now())
    Submission.objects.filter(pk=sub.pk).update(seed=review.seed)
    expected = reviews.move_on_quality(review, reviews.review_progress(review))
    ended = actions.move_on(learner, drill)
    assert ended is not None and ended.quality == expected
    assert DrillReview.objects.get().quality == expected


def test_the_reference_stays_locked_until_it_unlocks(learner: User, drill: Drill) -> None:
    assert actions.view_reference(learner, drill) is False
    review = DrillReview.objects.get()
    assert review.reference_viewed_at is None
    for _ in range(reviews.REFERENCE_AFTER_FAILURES):
        sub = graded_submission(learner, drill, Status.WRONG_ANSWER, timezone.now())
        Submission.objects.filter(pk=sub.pk).update(seed=review.seed)
    assert actions.view_reference(learner, drill) is True
    review.refresh_from_db()
    assert review.reference_viewed_at is not None


def test_open_hint_opens_one_at_a_time_and_caps_the_rating(learner: User, make_drill: Callable[..., Drill]) -> None:
    drill = make_drill(drill_text() + HINTS)
    first = actions.open_hint(learner, drill)
    assert [hint.en for hint in first.shown] == ["Add."] and first.total == 2 and first.next_hint == 2
    second = actions.open_hint(learner, drill)
    assert len(second.shown) == 2 and second.next_hint is None and second.rating_cap < first.rating_cap
    assert actions.open_hint(learner, drill).shown == second.shown  # every hint open: nothing more
