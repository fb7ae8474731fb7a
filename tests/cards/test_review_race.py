"""Two requests rating the same card at the same moment: exactly one review is recorded."""

from __future__ import annotations

import threading
from datetime import timedelta

from django.db import connection
from django.test import Client, TransactionTestCase
from django.urls import reverse
from django.utils import timezone

from cards import review
from cards.models import CardState, ReviewLog
from tests.cards.factories import make_card, make_user


def _in_memory_sqlite() -> bool:
    return connection.vendor == "sqlite" and connection.is_in_memory_db()


# The in-memory SQLite test database is shared between threads through SQLite's shared cache,
# which answers any second concurrent writer (even a reader) with "database table is locked" at
# once instead of waiting, so two threads cannot race there. `make test` runs this on PostgreSQL;
# tests/cards/test_review.py::InterleavingTests replays the same interleaving deterministically.
class DoubleSubmitRaceTests(TransactionTestCase):
    def race(self, url: str, data: dict[str, object], other_url: str | None = None) -> list[int]:
        """POST ``data`` to ``url`` (and to ``other_url`` when given) from two threads released together;
        returns both status codes."""
        barrier = threading.Barrier(2)
        statuses: list[int] = []
        errors: list[BaseException] = []

        def submit(target: str) -> None:
            client = Client()
            client.force_login(self.user)
            try:
                barrier.wait(timeout=10)
                statuses.append(client.post(target, data).status_code)
            except BaseException as exc:  # noqa: BLE001 - reported by the test below
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=submit, args=(target,)) for target in (url, other_url or url)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        self.assertEqual(errors, [])
        return statuses

    def setUp(self) -> None:
        if _in_memory_sqlite():
            self.skipTest("threads cannot race on the in-memory SQLite test database; this runs on PostgreSQL")
        self.user = make_user()
        self.card = make_card()

    def test_it_records_two_simultaneous_ratings_of_a_due_card_once(self) -> None:
        today = review.learner_today(review.get_profile(self.user), timezone.now())
        last = timezone.now() - timedelta(days=6)
        CardState.objects.create(
            user=self.user, card=self.card, due=today, interval=6, repetitions=2, last_reviewed_at=last, version=5
        )
        statuses = self.race(reverse("cards:rate", args=[self.card.uuid]), {"quality": 4, "version": 5})
        self.assertEqual(sorted(statuses), [302, 302])
        state = CardState.objects.get()
        self.assertEqual((state.version, state.repetitions, state.interval), (6, 3, 15))
        self.assertEqual(ReviewLog.objects.count(), 1)

    def test_it_records_two_simultaneous_first_ratings_of_a_new_card_once(self) -> None:
        statuses = self.race(reverse("cards:rate", args=[self.card.uuid]), {"quality": 5, "version": 0})
        self.assertEqual(sorted(statuses), [302, 302])
        self.assertEqual(CardState.objects.get().version, 1)
        self.assertEqual(ReviewLog.objects.count(), 1)

    def test_two_new_cards_rated_together_one_below_the_limit_land_once(self) -> None:
        profile = review.get_profile(self.user)
        profile.new_cards_per_day = 1
        profile.save(update_fields=["new_cards_per_day"])
        other = make_card()
        statuses = self.race(
            reverse("cards:rate", args=[self.card.uuid]),
            {"quality": 4, "version": 0},
            reverse("cards:rate", args=[other.uuid]),
        )
        self.assertEqual(len(statuses), 2)
        self.assertEqual(ReviewLog.objects.filter(was_new=True).count(), 1)
        self.assertEqual(CardState.objects.count(), 1)
