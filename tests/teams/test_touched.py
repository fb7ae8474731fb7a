"""The one route from a fact to the boards: each fact marks its learner day in its own transaction
(``cards.touched``), and beat's tick (``teams.services.refresh_touched_days``) claims each mark exactly
once, with a delete, in the transaction that recomputes the day.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any
from unittest import mock

import pytest
from django.conf import settings
from django.db import connection, connections, transaction
from django.test import TestCase, TransactionTestCase

from cards import review
from cards.models import Card, CardState, ReviewLog, TouchedDay
from cards.review import Outcome, RatingRequest
from cards.touched import touch
from teams import activity, services
from teams.models import DailyActivity
from tests.cards.factories import make_card, make_cards, make_note, make_user

NOW = datetime(2026, 3, 4, 12, tzinfo=UTC)
DAY = date(2026, 3, 4)


def marks() -> list[tuple[int, date]]:
    return list(TouchedDay.objects.order_by("pk").values_list("user_id", "day"))


class FactsMarkTheirDayTests(TestCase):
    """Every fact that changes a learner day writes its mark in the same transaction, and only then."""

    def setUp(self) -> None:
        self.user = make_user(time_zone="UTC")
        self.profile = review.get_profile(self.user)
        self.card = make_card()

    def rate(self, quality: int = 4, version: int = 0, now: datetime = NOW) -> Outcome:
        return review.rate(self.user, self.profile, RatingRequest(self.card.uuid, quality, version), now)

    def test_a_first_rating_marks_its_day(self) -> None:
        assert self.rate() == Outcome.RECORDED
        assert marks() == [(self.user.pk, DAY)]

    def test_a_rating_of_a_seen_card_marks_its_day_once_however_many_come(self) -> None:
        self.rate()
        self.rate(quality=5, version=1, now=NOW + timedelta(days=1))
        self.rate(quality=1, version=2, now=NOW + timedelta(days=1, hours=1))
        assert marks() == [(self.user.pk, DAY), (self.user.pk, DAY + timedelta(days=1))]

    def test_an_undo_marks_the_day_of_the_review_it_takes_back(self) -> None:
        self.rate()
        TouchedDay.objects.all().delete()  # as a tick would
        assert review.undo_last(self.user, self.profile, NOW) == self.card
        assert marks() == [(self.user.pk, DAY)]

    def test_a_duplicate_rating_marks_nothing(self) -> None:
        self.rate()
        TouchedDay.objects.all().delete()
        assert self.rate(quality=5, version=0) == Outcome.DUPLICATE
        assert marks() == []

    def test_a_rating_that_rolls_back_leaves_no_mark(self) -> None:
        with pytest.raises(RuntimeError), transaction.atomic():
            assert self.rate() == Outcome.RECORDED
            assert marks() == [(self.user.pk, DAY)]
            raise RuntimeError("the request failed after the rating")
        assert marks() == [] and not ReviewLog.ledger.exists()

    def test_an_undo_that_rolls_back_leaves_no_mark_and_no_reversal(self) -> None:
        self.rate()
        TouchedDay.objects.all().delete()
        with pytest.raises(RuntimeError), transaction.atomic():
            review.undo_last(self.user, self.profile, NOW)
            raise RuntimeError("the request failed after the undo")
        assert marks() == [] and ReviewLog.ledger.count() == 1

    def test_an_upsert_into_a_waiting_mark_keeps_one_row(self) -> None:
        touch(self.user.pk, DAY)
        first = TouchedDay.objects.get().pk
        touch(self.user.pk, DAY)
        assert list(TouchedDay.objects.values_list("pk", flat=True)) == [first]


class TickTests(TestCase):
    def setUp(self) -> None:
        self.user = make_user(time_zone="UTC")
        self.profile = review.get_profile(self.user)
        self.cards = make_cards(2)

    def rate(self, card: Card, quality: int = 5) -> None:
        assert review.rate(self.user, self.profile, RatingRequest(card.uuid, quality, 0), NOW) == Outcome.RECORDED

    def test_it_recomputes_a_marked_day_and_removes_the_mark(self) -> None:
        self.rate(self.cards[0])
        self.rate(self.cards[1])
        assert not DailyActivity.objects.exists()  # nothing is recomputed on the request
        assert services.refresh_touched_days() == 1
        assert DailyActivity.objects.get(user=self.user, day=DAY).xp == 2
        assert marks() == [] and services.refresh_touched_days() == 0

    def test_an_undo_keeps_the_ledger_row_and_takes_the_review_off_the_day(self) -> None:
        self.rate(self.cards[0])
        self.rate(self.cards[1])
        services.refresh_touched_days()
        assert review.undo_last(self.user, self.profile, NOW) == self.cards[1]
        assert services.refresh_touched_days() == 1
        stored = DailyActivity.objects.get(user=self.user, day=DAY)
        assert (stored.xp, stored.reviews) == (1, 1)
        assert ReviewLog.ledger.filter(user=self.user).count() == 3  # two reviews and one reversal
        assert services.rebuild_all(dry_run=True)["days_changed"] == 0  # the rebuild reads the ledger alike

    def test_a_day_whose_recompute_fails_stays_marked_and_the_others_go_on(self) -> None:
        other = make_user(time_zone="UTC")
        self.rate(self.cards[0])
        assert review.rate(other, review.get_profile(other), RatingRequest(self.cards[0].uuid, 5, 0), NOW)
        real = activity.refresh_day

        def failing(user_id: int, day: date, clock: Any = None) -> Any:
            if user_id == self.user.pk:
                raise RuntimeError("the database went away")
            return real(user_id, day, clock)

        with mock.patch.object(activity, "refresh_day", failing), self.assertLogs("teams.services", "ERROR") as logs:
            assert services.refresh_touched_days() == 1
        assert "the next run tries again" in logs.output[0]
        assert marks() == [(self.user.pk, DAY)]
        assert services.refresh_touched_days() == 1
        assert DailyActivity.objects.get(user=self.user, day=DAY).xp == 1

    def test_it_takes_at_most_its_limit_per_run_oldest_first(self) -> None:
        for offset in range(3):
            touch(self.user.pk, DAY + timedelta(days=offset))
        assert services.refresh_touched_days(limit=2) == 2
        assert marks() == [(self.user.pk, DAY + timedelta(days=2))]

    def test_beat_sends_the_tick_every_interval_and_drops_a_late_one(self) -> None:
        entry = settings.CELERY_BEAT_SCHEDULE["teams-refresh-touched"]
        assert entry["task"] == "teams.tasks.refresh_touched_days"
        assert 1 <= entry["schedule"] <= 2 and entry["options"]["expires"] >= entry["schedule"]
        from teams.tasks import refresh_touched_days_task

        self.rate(self.cards[0])
        assert refresh_touched_days_task() == 1  # the registered task runs the tick


def in_thread(target: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """Run ``target`` in a thread with its own database connection; its result or error lands in the dict."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["result"] = target()
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            out["error"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def wait_for_a_lock_wait(timeout: float = 10) -> None:
    """Until some session of this database waits on a row lock (PostgreSQL's pg_locks)."""
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
            if cursor.fetchone()[0]:
                return
            time.sleep(0.02)
    raise AssertionError("nobody waited on a lock")


@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks and concurrent claims need PostgreSQL")
class ConcurrentClaimTests(TransactionTestCase):
    """Real concurrent transactions on PostgreSQL, each thread with its own connection."""

    def setUp(self) -> None:
        self.user = make_user(time_zone="UTC")

    def test_of_two_concurrent_claims_of_one_mark_the_second_waits_and_loses(self) -> None:
        touch(self.user.pk, DAY)
        pk = TouchedDay.objects.get().pk
        claimed, release = threading.Event(), threading.Event()

        def first() -> bool:
            with transaction.atomic():
                won = services.claim(pk)
                claimed.set()
                release.wait(10)  # the recompute, still running
            return won

        def second() -> bool:
            claimed.wait(10)
            with transaction.atomic():
                return services.claim(pk)

        (t1, one), (t2, two) = in_thread(first), in_thread(second)
        wait_for_a_lock_wait()  # the second claim waits on the first one's row
        release.set()
        t1.join(10), t2.join(10)
        assert (one, two) == ({"result": True}, {"result": False})
        assert marks() == []

    def test_four_ticks_at_once_recompute_every_marked_day_exactly_once(self) -> None:
        users = [self.user, *(make_user(time_zone="UTC") for _ in range(4))]
        for user in users:
            for offset in range(6):
                touch(user.pk, DAY + timedelta(days=offset))
        recomputed: Counter[tuple[int, date]] = Counter()
        lock = threading.Lock()

        def counting(user_id: int, day: date, clock: Any = None) -> None:
            with lock:
                recomputed[(user_id, day)] += 1
            time.sleep(0.005)  # long enough for the ticks to meet on the same rows

        start = threading.Barrier(4)

        def tick() -> int:
            start.wait(10)
            return services.refresh_touched_days()

        with mock.patch.object(services, "refresh_learner_day", counting):
            threads = [in_thread(tick) for _ in range(4)]
            for thread, _ in threads:
                thread.join(30)
        assert all("error" not in out for _, out in threads), threads
        assert sum(out["result"] for _, out in threads) == 30
        assert len(recomputed) == 30 and set(recomputed.values()) == {1}
        assert marks() == []

    def test_a_claim_waits_for_a_fact_that_marked_a_waiting_day_and_then_sees_it(self) -> None:
        """The mark's upsert locks the waiting row until the fact commits: a tick in between must not
        recompute the day without the fact and drop its mark (what ON CONFLICT DO NOTHING would do)."""
        profile = review.get_profile(self.user)
        card = make_card(note=make_note())
        touch(self.user.pk, DAY)  # an earlier fact's mark, still waiting
        rated, release = threading.Event(), threading.Event()

        def fact() -> Outcome:
            with transaction.atomic():
                outcome = review.rate(self.user, profile, RatingRequest(card.uuid, 5, 0), NOW)
                rated.set()
                release.wait(10)  # the rest of the request, before its commit
            return outcome

        (t_fact, fact_out) = in_thread(fact)
        rated.wait(10)
        (t_tick, tick_out) = in_thread(services.refresh_touched_days)
        wait_for_a_lock_wait()  # the tick's claim waits for the fact
        release.set()
        t_fact.join(10), t_tick.join(10)
        assert fact_out == {"result": Outcome.RECORDED} and tick_out == {"result": 1}
        assert DailyActivity.objects.get(user=self.user, day=DAY).xp == 1
        assert marks() == []
        assert CardState.objects.get(user=self.user).version == 1
