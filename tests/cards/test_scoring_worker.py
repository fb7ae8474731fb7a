"""The scoring worker as `make run` starts it (prefork, one job at a time, niced) on the test Redis and the test
database: a fit past its time limit is recorded as failed, and a fit whose worker was killed is given up by the next
worker as it starts (issue 40), after which the learner's next fit runs to the end.

Slow: each fit imports torch in a fresh child and fits a few thousand reviews.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from cards import optimising, tasks
from cards.models import Optimisation
from jobs.models import GraderHeartbeat
from tests.cards.factories import make_user
from tests.cards.test_optimising import log_reviews
from tests.conftest import Workers

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("celery-redis")]
SCORING_ARGS = ("--max-tasks-per-child", "1")


def scoring_workers(database: str, broker: str, logs: Path, **env: str) -> Workers:
    """Workers as the scoring program runs them (scripts/supervisord.conf), less the nice."""
    env = {"CELERY_WORKER_POOL": "prefork", **env}
    return Workers(database, broker, logs, settings.SCORING_QUEUE, env, SCORING_ARGS)


@pytest.fixture
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scoring-logs")


@pytest.fixture
def stopped() -> Iterator[list[Workers]]:
    started: list[Workers] = []
    yield started
    for pool in started:
        pool.stop_all()


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} within {timeout} s")


def status(row: Optimisation) -> str:
    row.refresh_from_db()
    return row.status


@pytest.mark.django_db(transaction=True)
def test_it_records_a_fit_past_its_time_limit_as_failed(
    shared_database: str, celery_on_redis: str, logs: Path, stopped: list[Workers]
) -> None:
    """The limits travel in the message, from the settings of whoever sends it (the web, beat; every process of
    a site reads the same FSRS_FIT_TIME_LIMIT): here a message with a 3 s soft limit, against a fit of ~7 s on an
    idle machine. The pool's soft-limit timer starts when the job is sent and is dropped if it fires before the
    child has said it took the job (billiard's ``on_soft_timeout``), which a 1 s limit met on a loaded machine."""
    assert tasks.optimise_parameters.soft_time_limit == settings.FSRS_FIT_TIME_LIMIT
    pool = scoring_workers(shared_database, celery_on_redis, logs)
    stopped.append(pool)
    pool.start(concurrency=1)
    user = make_user(time_zone="UTC", scheduler="fsrs")
    log_reviews(user, cards=300, reviews_each=21)  # 6,000 scored: the fit trains on 2,000 of them
    row = optimising.queue(user, timezone.now())
    assert row is not None
    tasks.optimise_parameters.apply_async((row.pk,), soft_time_limit=3, time_limit=60)
    wait_for(lambda: status(row) in ("done", "failed"), 60, "the fit did not end")
    assert row.status == "failed" and row.message == optimising.FAILED_MESSAGE, row.message
    assert row.finished_at is not None


@pytest.mark.django_db(transaction=True)
def test_it_runs_the_next_fit_after_a_worker_was_killed_mid_fit(
    shared_database: str, celery_on_redis: str, logs: Path, stopped: list[Workers]
) -> None:
    pool = scoring_workers(shared_database, celery_on_redis, logs)
    stopped.append(pool)
    worker = pool.start(concurrency=1)
    user = make_user(time_zone="UTC", scheduler="fsrs")
    log_reviews(user, cards=260, reviews_each=21)  # 5,200 scored: enough to fit
    first = tasks.request_optimisation(user, timezone.now())
    assert first is not None
    wait_for(lambda: status(first) == "running", 60, "the worker did not claim the fit")
    assert not GraderHeartbeat.objects.exists(), "a scoring worker starts no sandbox pool and is no grader"
    worker.kill()
    assert status(first) == "running"  # what issue 40 found: held by the one-active constraint
    # The next scoring worker gives up what the killed one held at once (its claimant is provably dead), not
    # FSRS_FIT_STALE_AFTER later.
    pool.start(concurrency=1)
    wait_for(lambda: status(first) == "failed", 30, "the new worker did not give up the killed fit")
    assert first.message == optimising.STALE_MESSAGE
    second = tasks.request_optimisation(user, timezone.now())
    assert isinstance(second, Optimisation)
    wait_for(lambda: status(second) in ("done", "failed"), 120, "the next fit did not finish")
    assert second.status == "done", second.message
