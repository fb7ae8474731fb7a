"""Shared test base for teams: three personas (owner, member, outsider) and a way to log reviews.

Reviews are written as real ``ReviewLog`` rows. The teams receivers queue a Celery task on commit,
so ``review`` (through ``committed``) runs the commit's callbacks as production commits do, checks
what they published to the broker (the session's own folder, see ``tests/conftest.py``), and then
runs each published task the way a worker would: its registered function called with the
JSON-decoded arguments of the message.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import pytest
import redis
from django.contrib.auth.models import AbstractBaseUser
from django.test import TestCase, override_settings

from cards.models import Card, CardState, ReviewLog
from quizsite.celery import app
from teams.models import Membership, Team
from tests.cards.factories import make_card, make_note, make_user
from tests.cards.stats_factories import make_log
from tests.conftest import Published, published_tasks

DEFAULT_TEST_REDIS = "redis://127.0.0.1:6379/14"


def test_redis_url() -> str:
    return os.environ.get("TEST_REDIS_URL") or DEFAULT_TEST_REDIS


test_redis_url.__test__ = False  # type: ignore[attr-defined]


@contextmanager
def redis_boards() -> Iterator[redis.Redis]:
    """Point the boards at the test Redis under a fresh key prefix; delete only those keys after.

    Skips the test (with the reason) when no Redis answers. Never FLUSHDB: other suites share it.
    """
    url = test_redis_url()
    conn = redis.Redis.from_url(url, socket_connect_timeout=1)
    try:
        conn.ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis at {url} is not answering ({exc}); set TEST_REDIS_URL or start redis-server")
    key_prefix = f"test-teams-{uuid.uuid4().hex[:12]}:"
    try:
        with override_settings(REDIS_URL=url, TEAMS_BOARD_PREFIX=key_prefix):
            yield conn
    finally:
        keys = list(conn.scan_iter(match=f"{key_prefix}*", count=1000))
        if keys:
            conn.delete(*keys)
        conn.close()


def run_like_a_worker(messages: list[Published]) -> None:
    """Run each published task's registered function with the message's arguments (no eager mode)."""
    for message in messages:
        app.tasks[message.task](*message.args, **message.kwargs)


def refresh_message(user: AbstractBaseUser, day: date) -> Published:
    return Published("teams.tasks.refresh_learner_day", [user.pk, day.isoformat()], {}, "celery")


def at(day: date, hour: int = 12) -> datetime:
    return datetime.combine(day, time(hour), tzinfo=UTC)


class TeamTestCase(TestCase):
    """An owner and a member share a team; the outsider belongs to none of it."""

    owner: AbstractBaseUser
    member: AbstractBaseUser
    outsider: AbstractBaseUser
    team: Team
    cards: list[Card]

    @classmethod
    def setUpTestData(cls) -> None:
        cls.owner = make_user("olivia", time_zone="UTC")
        cls.member = make_user("max", time_zone="UTC")
        cls.outsider = make_user("oscar", time_zone="UTC")
        cls.team = Team.objects.create(name="Tensor Tamers", slug="tensor-tamers-a1b2c3", time_zone="UTC")
        cls.owner_membership = Membership.objects.create(team=cls.team, user=cls.owner, role=Membership.Role.OWNER)
        cls.member_membership = Membership.objects.create(team=cls.team, user=cls.member)
        note = make_note()
        cls.cards = [make_card(note=note) for _ in range(4)]

    @contextmanager
    def committed(self) -> Iterator[list[Published]]:
        """Commit what the block writes: run its on-commit callbacks (which publish), then the
        published tasks as the worker would. Yields the published messages for the caller to check."""
        with published_tasks() as sent:
            with self.captureOnCommitCallbacks(execute=True):
                yield sent
            published = list(sent)
        run_like_a_worker(published)

    def review(self, user: AbstractBaseUser, card: Card, day: date, quality: int = 4, **fields: Any) -> ReviewLog:
        """A review as the review flow records it: state and log; on commit, exactly one refresh of
        that learner day goes to the ``celery`` queue, and a worker runs it."""
        interval = fields.pop("interval_before", 1)
        due_after = fields.pop("due_after", day + timedelta(days=max(1, interval * 2)))
        with self.committed() as sent:
            CardState.objects.update_or_create(
                user=user,
                card=card,
                defaults={"due": due_after, "last_reviewed_at": at(day), "last_review_day": day, "interval": interval},
            )
            log = make_log(
                user,
                card,
                reviewed_at=fields.pop("reviewed_at", at(day)),
                review_day=day,
                quality=quality,
                interval_before=interval,
                due_after=due_after,
                **fields,
            )
        assert sent == [refresh_message(user, log.review_day)]
        return log
