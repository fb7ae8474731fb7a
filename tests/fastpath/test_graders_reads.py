"""The submission path's compiled reads answer as their querysets do; the worker keeps a drill row while its
version holds (``fastpath.grading_drills``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from cards.models import CardState, Profile
from fastpath import card_states, drill_reviews, grading_drills, profiles
from fastpath.submission_window import limit_th_newest
from graders.models import Drill, DrillReview, Submission

pytestmark = pytest.mark.django_db


def fields(row: object) -> dict[str, object]:
    return {f.attname: getattr(row, f.attname) for f in type(row)._meta.concrete_fields}  # type: ignore[attr-defined]


def test_the_profile_and_the_card_state_read_as_the_orm_does(learner: User, drill: Drill) -> None:
    assert profiles.BY_USER.first(user_id=learner.pk) is None  # no profile yet
    profile = Profile.objects.create(user=learner, new_cards_per_day=7)
    assert fields(profiles.BY_USER.first(user_id=learner.pk)) == fields(profile)
    assert card_states.OF_CARD.first(user_id=learner.pk, card_id=drill.card_id) is None
    state = CardState.objects.create(user=learner, card=drill.card, due=timezone.localdate(), interval=1)
    assert fields(card_states.OF_CARD.first(user_id=learner.pk, card_id=drill.card_id)) == fields(state)


def test_the_latest_and_the_open_review_read_as_the_orm_does(learner: User, drill: Drill) -> None:
    now = timezone.now()
    older = DrillReview.objects.create(user=learner, drill=drill, seed=1, started_at=now - timedelta(days=2))
    newer = DrillReview.objects.create(user=learner, drill=drill, seed=2, started_at=now, finished_at=now)
    assert drill_reviews.LATEST.first(user_id=learner.pk, drill_id=drill.pk).pk == newer.pk  # type: ignore[union-attr]
    assert drill_reviews.OPEN.first(user_id=learner.pk, drill_id=drill.pk, seed=1).pk == older.pk  # type: ignore[union-attr]
    assert drill_reviews.OPEN.first(user_id=learner.pk, drill_id=drill.pk, seed=2) is None  # finished


def test_the_rate_limit_window_reads_the_limit_th_newest(learner: User, drill: Drill) -> None:
    now = timezone.now()
    for minutes in (1, 2, 3):
        Submission.objects.create(
            user=learner, drill=drill, code="x", seed=minutes, queued_at=now - timedelta(minutes=minutes)
        )
    since = now - timedelta(minutes=10)
    window = limit_th_newest(Submission, 2)
    assert window is limit_th_newest(Submission, 2)  # one statement per model and limit
    assert window.first(user_id=learner.pk, since=since) == now - timedelta(minutes=2)
    assert limit_th_newest(Submission, 4).first(user_id=learner.pk, since=since) is None


def test_a_worker_keeps_the_drill_while_its_version_holds(drill: Drill) -> None:
    kept = grading_drills.grading_drill(drill.pk)
    with CaptureQueriesContext(connection) as queries:
        assert grading_drills.grading_drill(drill.pk) is kept
    assert len(queries) == 1  # the version only
    Drill.objects.filter(pk=drill.pk).update(version="changed")
    again = grading_drills.grading_drill(drill.pk)
    assert again is not kept and again.version == "changed"
    grading_drills.forget()
    assert grading_drills.grading_drill(drill.pk) is not again


def test_a_drill_that_is_not_there_raises() -> None:
    with pytest.raises(Drill.DoesNotExist):
        grading_drills.grading_drill(987_654)
