"""A learner's status on a drill: the pure definition, and the facts gathered from their rows."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from cards.models import CardState
from graders.models import Drill, DrillReview, Submission
from graders.rating.progress import DrillFacts, DrillStatus, drill_status, learner_facts
from jobs.status import VERDICTS, Status
from tests.graders.conftest import graded_submission

TODAY = date(2026, 11, 25)


def test_it_calls_an_untouched_drill_new() -> None:
    assert drill_status(DrillFacts(), TODAY) == DrillStatus.NEW


def test_it_tells_a_first_try_from_a_later_solve() -> None:
    first = DrillFacts(attempts=1, accepted=True, first_attempt_accepted=True, best_verdict=Status.ACCEPTED)
    later = DrillFacts(attempts=3, accepted=True, best_verdict=Status.ACCEPTED)
    assert drill_status(first, TODAY) == DrillStatus.SOLVED_FIRST_TRY
    assert drill_status(later, TODAY) == DrillStatus.SOLVED


def test_it_puts_due_before_everything_else() -> None:
    solved_and_due = DrillFacts(attempts=1, accepted=True, first_attempt_accepted=True, due=TODAY)
    assert drill_status(solved_and_due, TODAY) == DrillStatus.DUE
    assert drill_status(DrillFacts(attempts=1, accepted=True, due=TODAY + timedelta(days=1)), TODAY) == "solved"


def test_it_says_given_up_only_without_an_accepted_answer() -> None:
    assert drill_status(DrillFacts(attempts=2, gave_up_last=True), TODAY) == DrillStatus.GAVE_UP
    assert drill_status(DrillFacts(attempts=2, accepted=True, gave_up_last=True), TODAY) == DrillStatus.SOLVED
    assert drill_status(DrillFacts(attempts=2), TODAY) == DrillStatus.ATTEMPTED


@given(
    attempts=st.integers(0, 5),
    accepted=st.booleans(),
    first=st.booleans(),
    gave_up=st.booleans(),
    due_in=st.none() | st.integers(-3, 3),
)
def test_it_gives_every_combination_exactly_one_status(
    attempts: int, accepted: bool, first: bool, gave_up: bool, due_in: int | None
) -> None:
    due = None if due_in is None else TODAY + timedelta(days=due_in)
    facts = DrillFacts(attempts, accepted, accepted and first, None, gave_up, due)
    status = drill_status(facts, TODAY)
    assert status in DrillStatus
    assert (status == DrillStatus.DUE) == (due is not None and due <= TODAY)
    if status == DrillStatus.NEW:
        assert attempts == 0 and not accepted and not gave_up


def _submission(user: User, drill: Drill, status: str, minutes: int, kind: str = "submit") -> Submission:
    return graded_submission(user, drill, status, timezone.now() - timedelta(minutes=100 - minutes), kind)


@pytest.mark.django_db
def test_it_gathers_the_facts_from_submissions_reviews_and_states(learner: User, drill: Drill) -> None:
    _submission(learner, drill, Status.WRONG_ANSWER, 1)
    _submission(learner, drill, Status.ACCEPTED, 5, kind="examples")  # not an attempt
    _submission(learner, drill, Status.RUNTIME_ERROR, 2)
    facts = learner_facts(learner)[drill.pk]
    assert (facts.attempts, facts.accepted, facts.best_verdict) == (2, False, Status.WRONG_ANSWER)
    _submission(learner, drill, Status.ACCEPTED, 3)
    facts = learner_facts(learner)[drill.pk]
    assert (facts.attempts, facts.accepted, facts.first_attempt_accepted) == (3, True, False)
    assert facts.best_verdict == Status.ACCEPTED


@pytest.mark.django_db
def test_it_sees_a_first_try_and_a_give_up(learner: User, drill: Drill, make_drill: object) -> None:
    _submission(learner, drill, Status.ACCEPTED, 1)
    _submission(learner, drill, Status.WRONG_ANSWER, 2)
    assert learner_facts(learner)[drill.pk].first_attempt_accepted
    now = timezone.now()
    DrillReview.objects.create(user=learner, drill=drill, seed=1, finished_at=now, outcome="gave_up", quality=0)
    assert learner_facts(learner)[drill.pk].gave_up_last
    DrillReview.objects.create(
        user=learner, drill=drill, seed=2, finished_at=now + timedelta(minutes=1), outcome="accepted", quality=5
    )
    assert not learner_facts(learner)[drill.pk].gave_up_last


@pytest.mark.django_db
def test_it_reads_the_due_day_of_a_rated_card_only(learner: User, drill: Drill) -> None:
    state = CardState.objects.create(user=learner, card=drill.card, due=TODAY)
    assert drill.pk not in learner_facts(learner)
    state.last_reviewed_at = timezone.now()
    state.save(update_fields=["last_reviewed_at"])
    assert learner_facts(learner)[drill.pk].due == TODAY


def test_the_verdict_ranking_covers_every_verdict() -> None:
    from graders.rating.progress import VERDICT_RANK

    assert set(VERDICT_RANK) == set(VERDICTS) - {Status.INTERNAL_ERROR} and VERDICT_RANK[Status.ACCEPTED] == 0
