"""Shared test base for teams: three personas (owner, member, outsider) and a way to log reviews.

Reviews are written as real ``ReviewLog`` rows and mark their learner day in the same transaction, as
the review flow does (``cards.touched``); ``committed`` then runs beat's tick (``refresh_touched_days``)
the way a worker would, so each test sees the boards a second after the fact.
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
from django.db import transaction
from django.test import TestCase, override_settings

from cards.models import Card, CardState, ReviewLog, TouchedDay
from cards.touched import touch
from teams import services
from teams.models import Membership, Team
from tests.cards.factories import make_card, make_note, make_user
from tests.cards.stats_factories import make_log

DEFAULT_TEST_REDIS = "redis://127.0.0.1:6379/14"


def test_redis_url() -> str:
    return os.environ.get("TEST_REDIS_URL") or DEFAULT_TEST_REDIS


test_redis_url.__test__ = False


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
    def committed(self) -> Iterator[None]:
        """Commit what the block writes (a savepoint in a TestCase), then run beat's tick as a worker would:
        every day the block marked is recomputed, and none stays marked."""
        with transaction.atomic():
            yield
        services.refresh_touched_days()
        assert not TouchedDay.objects.exists()

    def review(self, user: AbstractBaseUser, card: Card, day: date, quality: int = 4, **fields: Any) -> ReviewLog:
        """A review as the review flow records it: state, log and the mark of its learner day, in one
        transaction; then the tick recomputes that day."""
        interval = fields.pop("interval_before", 1)
        due_after = fields.pop("due_after", day + timedelta(days=max(1, interval * 2)))
        with self.committed():
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
            touch(user.pk, log.review_day)
        return log
