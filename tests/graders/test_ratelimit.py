"""The per-learner submission rate limit, counted from the submissions table."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection, connections
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from graders.attempts.submissions import RateLimit, Refused, check_rate, submit
from graders.models import Drill, Submission

pytestmark = pytest.mark.django_db

RULE = RateLimit(limit=3, window_seconds=60)


def submit_at(user: User, drill: Drill, seconds_ago: float) -> None:
    when = timezone.now() - timedelta(seconds=seconds_ago)
    Submission.objects.create(user=user, drill=drill, code="x", seed=1, drill_version="v", queued_at=when)


def test_it_allows_submissions_under_the_limit(learner: User, drill: Drill) -> None:
    submit_at(learner, drill, 10)
    submit_at(learner, drill, 5)
    assert check_rate(learner.pk, timezone.now(), RULE).allowed


def test_it_refuses_the_submission_over_the_limit_and_says_when_to_retry(learner: User, drill: Drill) -> None:
    for ago in (50, 20, 5):
        submit_at(learner, drill, ago)
    decision = check_rate(learner.pk, timezone.now(), RULE)
    assert not decision.allowed
    assert 10 <= decision.retry_after <= 11  # the oldest (50 s ago) leaves the 60 s window in 10 s
    assert decision.message(RULE).startswith("Too many submissions: at most 3 every 60 seconds.")


def test_it_forgets_submissions_older_than_the_window(learner: User, drill: Drill) -> None:
    for ago in (300, 90, 61):
        submit_at(learner, drill, ago)
    assert check_rate(learner.pk, timezone.now(), RULE).allowed


def test_it_counts_each_learner_separately(learner: User, drill: Drill) -> None:
    other = User.objects.create_user("other", password="x")
    for ago in (3, 2, 1):
        submit_at(other, drill, ago)
    assert check_rate(learner.pk, timezone.now(), RULE).allowed
    assert not check_rate(other.pk, timezone.now(), RULE).allowed


def test_it_waits_for_the_limit_th_newest_when_the_window_holds_more(learner: User, drill: Drill) -> None:
    for ago in (55, 50, 40, 20, 5):  # five in the window, limit three: room again once the 40 s one leaves
        submit_at(learner, drill, ago)
    decision = check_rate(learner.pk, timezone.now(), RULE)
    assert not decision.allowed
    assert 20 <= decision.retry_after <= 21


def test_it_refuses_everything_when_the_limit_is_zero(learner: User, drill: Drill) -> None:
    decision = check_rate(learner.pk, timezone.now(), RateLimit(limit=0, window_seconds=60))
    assert not decision.allowed
    assert decision.retry_after == 60


def test_it_reads_one_row_however_large_the_limit(learner: User, drill: Drill) -> None:
    for ago in range(1, 40):
        submit_at(learner, drill, ago)
    with CaptureQueriesContext(connection) as queries:
        assert check_rate(learner.pk, timezone.now(), RateLimit(limit=1_000_000, window_seconds=60)).allowed
    assert len(queries) == 1
    assert re.search(r"LIMIT 1\b", queries[0]["sql"]), queries[0]["sql"]  # one row, not up to a million


@pytest.mark.django_db(transaction=True)
def test_it_lets_no_more_than_the_limit_through_when_submits_race(learner: User, drill: Drill) -> None:
    """Issue 36: 13 of a burst were accepted against a limit of 10. Each thread has its own connection, and all
    start their submit at the same moment; the count and the insert must behave as one step per learner."""
    if connection.vendor != "postgresql":
        pytest.skip("the race needs concurrent transactions: run against PostgreSQL (DATABASE_URL)")
    burst, limit = 24, 10
    start = threading.Barrier(burst)

    def one(_: int) -> bool:
        try:
            start.wait()
            return not isinstance(submit(learner, drill, "def solution(x):\n    return x + 1\n"), Refused)
        finally:
            connections.close_all()

    with override_settings(GRADER_RATE_LIMIT=limit, GRADER_RATE_WINDOW=60):
        with ThreadPoolExecutor(burst) as pool:
            accepted = sum(pool.map(one, range(burst)))
    assert accepted == limit
    assert Submission.objects.filter(user=learner).count() == limit
