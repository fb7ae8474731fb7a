"""Drill and Submission: the state machine's database guards and the small domain methods."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import IntegrityError, transaction

from graders.models import Drill, Status, Submission

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def make_submission(learner: User, drill: Drill, **fields: object) -> Submission:
    return Submission.objects.create(
        user=learner,
        drill=drill,
        code="def solution(x):\n    return x\n",
        seed=1,
        drill_version=drill.version,
        **fields,
    )


def test_it_knows_final_statuses_without_a_database() -> None:
    assert not Submission(status=Status.QUEUED).is_final
    assert not Submission(status=Status.RUNNING).is_final
    assert all(Submission(status=s).is_final for s in Status if s not in (Status.QUEUED, Status.RUNNING))


def test_it_counts_only_submits_as_attempts() -> None:
    assert Submission(kind=Submission.Kind.SUBMIT).is_attempt
    assert not Submission(kind=Submission.Kind.EXAMPLES).is_attempt


def test_it_calls_a_claim_stale_only_after_the_limit() -> None:
    sub = Submission(status=Status.RUNNING, claimed_at=NOW - timedelta(seconds=91))
    assert sub.claim_is_stale(NOW, timedelta(seconds=90))
    assert not sub.claim_is_stale(NOW, timedelta(seconds=120))
    assert not Submission(status=Status.QUEUED, claimed_at=None).claim_is_stale(NOW, timedelta(seconds=1))


def test_it_routes_drills_by_device() -> None:
    assert Drill(device="cpu").queue == "grade_cpu"
    assert Drill(device="cuda").queue == "grade_gpu"


@pytest.mark.django_db
def test_it_rejects_an_unknown_status(learner: User, drill: Drill) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        make_submission(learner, drill, status="maybe")


@pytest.mark.django_db
def test_it_rejects_a_running_row_without_a_claimant(learner: User, drill: Drill) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        make_submission(learner, drill, status=Status.RUNNING)


@pytest.mark.django_db
def test_it_rejects_a_final_row_without_a_verdict(learner: User, drill: Drill) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        make_submission(learner, drill, status=Status.ACCEPTED, finished_at=NOW)


@pytest.mark.django_db
def test_it_rejects_a_queued_row_with_a_verdict(learner: User, drill: Drill) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        make_submission(learner, drill, verdict={"status": "accepted"}, finished_at=NOW)


@pytest.mark.django_db
def test_it_lists_a_learners_history_newest_first(learner: User, drill: Drill) -> None:
    old = make_submission(learner, drill, queued_at=NOW - timedelta(minutes=5))
    new = make_submission(learner, drill, queued_at=NOW)
    other = User.objects.create_user("other")
    make_submission(other, drill)
    assert list(Submission.objects.history(learner.pk, drill.pk)) == [new, old]


@pytest.mark.django_db
def test_it_finds_stale_running_rows(learner: User, drill: Drill) -> None:
    from graders.kinds.verdicts import SUBMISSIONS
    from jobs import lifecycle as jobs

    stale = make_submission(learner, drill, status=Status.RUNNING, claim_token="h:1:1:x", claimed_at=NOW)
    make_submission(learner, drill, status=Status.RUNNING, claim_token="h:1:1:y", claimed_at=NOW + timedelta(hours=1))
    assert jobs.lost(SUBMISSIONS, NOW + timedelta(minutes=2)) == [stale]


@pytest.mark.django_db
def test_it_has_no_missing_migrations() -> None:
    out = StringIO()
    call_command("makemigrations", "graders", "--check", "--dry-run", stdout=out)


@pytest.mark.parametrize(
    ("seconds", "words"),
    [(0, "0 seconds"), (1, "1 second"), (12, "12 seconds"), (60, "1 minute"), (150, "2 minutes"), (7300, "2 hours")],
)
def test_it_says_how_long_the_graders_have_been_silent(seconds: int, words: str) -> None:
    from jobs.heartbeat import GraderStatus

    status = GraderStatus("grade_cpu", 0, NOW - timedelta(seconds=seconds), [])
    assert status.silent_for(NOW) == words
    assert GraderStatus("grade_cpu", 0, None, []).silent_for(NOW) == ""
