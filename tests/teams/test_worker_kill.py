"""The boards survive a worker killed between a fact and its recompute: a real ``celery worker -B``
(beat sends ``refresh_touched_days`` every second) on the test Redis and the test database.

1. A rating reaches the boards through the live worker.
2. The worker is SIGKILLed in the middle of a recompute: it has claimed (deleted) the day's mark and
   waits on the learner's row lock, which this test holds. Its transaction dies with it, so the mark
   comes back once its session ends; a rating and an undo made while no worker runs add to the waiting day.
3. A new worker starts: the boards come out right, as the database says they should.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from cards import review
from cards.models import ReviewLog, TouchedDay
from cards.review import Outcome, RatingRequest
from teams import boards, services
from teams.models import DailyActivity, Membership, Team
from tests.cards.factories import make_cards, make_user
from tests.conftest import Workers

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("celery-redis")]


@pytest.fixture(scope="module")
def board_prefix() -> str:
    return f"test-teams-kill-{uuid.uuid4().hex[:8]}:"


@pytest.fixture(scope="module")
def workers(
    shared_database: str, celery_on_redis: str, tmp_path_factory: pytest.TempPathFactory, board_prefix: str
) -> Iterator[Workers]:
    logs = tmp_path_factory.mktemp("celery-logs")
    schedule = Path(logs) / "beat-schedule"
    pool = Workers(
        shared_database,
        celery_on_redis,
        logs,
        "celery",
        {"TEAMS_BOARD_PREFIX": board_prefix, "TEAMS_REFRESH_INTERVAL": "1"},
        ("-B", "--schedule", str(schedule)),
    )
    try:
        yield pool
    finally:
        pool.stop_all()


@pytest.fixture
def redis_boards(celery_on_redis: str, board_prefix: str) -> Iterator[redis.Redis]:
    conn = redis.Redis.from_url(celery_on_redis)
    try:
        with override_settings(REDIS_URL=celery_on_redis, TEAMS_BOARD_PREFIX=board_prefix):
            yield conn
    finally:
        keys = list(conn.scan_iter(match=f"{board_prefix}*"))
        if keys:
            conn.delete(*keys)
        conn.close()


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def published_row(conn: redis.Redis, user_id: int) -> dict[str, object] | None:
    """The learner's all-time row as the worker published it to the boards' Redis hash."""
    raw = conn.hget(f"{boards.prefix()}rows:all", str(user_id))
    return json.loads(raw) if raw else None


def true_row(user_id: int) -> dict[str, object]:
    """What the row must say: computed now from the rollup in the database (checked against the ledger)."""
    return json.loads(boards.compute_rows([user_id], None, timezone.now())[user_id].to_json())


def lock_waits() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        return int(cursor.fetchone()[0])


def test_the_boards_come_out_right_after_a_worker_is_killed_mid_recompute(
    workers: Workers, transactional_db: None, redis_boards: redis.Redis
) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the held row lock and the killed session need PostgreSQL")
    learner = make_user(time_zone="UTC")
    team = Team.objects.create(name="Killers", slug="killers-a1b2c3", time_zone="UTC")
    Membership.objects.create(team=team, user=learner, role=Membership.Role.OWNER)
    profile = review.get_profile(learner)
    cards = make_cards(4)

    def rate(index: int) -> None:
        request = RatingRequest(cards[index].uuid, 5, 0)
        assert review.rate(learner, profile, request, timezone.now()) == Outcome.RECORDED

    first = workers.start(concurrency=1)
    rate(0)
    wait_for(lambda: not TouchedDay.objects.exists() and published_row(redis_boards, learner.pk) is not None, 30, "1")
    assert published_row(redis_boards, learner.pk) == true_row(learner.pk)
    assert true_row(learner.pk)["xp"] == 1

    # Hold the learner's row lock (teams.activity.refresh_day takes it FOR UPDATE after the claim), then give
    # the worker a fact: it claims the mark and waits on the lock, inside the transaction that deleted it.
    # NO KEY UPDATE: the ratings' foreign-key checks (KEY SHARE) on the same row still go through.
    holder = connection.copy()
    holder.connect()
    holder.set_autocommit(False)
    try:
        with holder.cursor() as cursor:
            cursor.execute("SELECT id FROM auth_user WHERE id = %s FOR NO KEY UPDATE", [learner.pk])
        rate(1)
        wait_for(lambda: lock_waits() > 0, 30, "the worker's recompute to wait on the learner's lock")
        first.kill()  # SIGKILL, as the OOM killer would, with the claim not committed
    finally:
        holder.rollback()  # the dead worker's session gets the lock, finds its client gone, rolls back
        holder.close()
    wait_for(lambda: TouchedDay.objects.filter(user=learner).exists(), 30, "the killed claim to roll back")
    assert DailyActivity.objects.get(user=learner).xp == 1  # the recompute died with its claim
    # While no worker runs: another rating and an undo on the same day, which waits for one recompute.
    rate(2)
    assert review.undo_last(learner, profile, timezone.now() + timedelta(seconds=1)) == cards[2]
    assert TouchedDay.objects.filter(user=learner).count() == 1  # one mark for the day, three facts waiting

    workers.start(concurrency=1)
    wait_for(lambda: not TouchedDay.objects.exists(), 30, "the restarted worker's tick")
    row = published_row(redis_boards, learner.pk)
    assert row == true_row(learner.pk)
    assert row is not None and row["xp"] == 2  # two ratings count; the undone one and its reversal do not
    assert DailyActivity.objects.get(user=learner).xp == 2
    assert ReviewLog.ledger.filter(user=learner).count() == 4
    assert services.rebuild_all(dry_run=True, user_ids=[learner.pk])["days_changed"] == 0  # rollup == ledger
