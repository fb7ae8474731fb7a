"""The desired-retention workload preview: a higher target costs more reviews, on the learner's own cards."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from django.test import TestCase
from django.urls import reverse

from cards import review
from cards.models import Profile
from cards.review import RatingRequest
from cards.scheduling import fsrs6
from cards.scheduling.workload import SimCard, compare, simulate
from tests.cards.factories import make_cards, make_user

TODAY = date(2026, 3, 10)


def deck(n: int) -> list[SimCard]:
    return [
        SimCard(fsrs6.Memory(stability=2 + k % 40, difficulty=5.0, last_day=TODAY - timedelta(days=k % 9)))
        for k in range(n)
    ]


def test_it_costs_more_reviews_at_a_higher_retention() -> None:
    rows = compare(deck(300), new_cards=100, new_per_day=10, today=TODAY)
    assert [row.retention for row in rows] == [0.80, 0.85, 0.90, 0.95]
    averages = [row.average for row in rows]
    assert averages == sorted(averages) and averages[-1] > 1.5 * averages[0]
    assert all(len(row.per_day) == 30 for row in rows)


def test_it_brings_new_cards_up_to_the_daily_limit_until_none_are_left() -> None:
    row = simulate([], new_cards=25, new_per_day=10, today=TODAY, retention=0.9, days=3)
    # New cards only: 10, 10 then 5 first answers, each failure answered once more the same day.
    assert 10 <= row.per_day[0] <= 20 and 10 <= row.per_day[1] and 5 <= row.per_day[2]


def test_it_gives_the_same_table_for_the_same_cards() -> None:
    assert simulate(deck(50), 0, 0, TODAY, 0.9).per_day == simulate(deck(50), 0, 0, TODAY, 0.9).per_day


def test_it_counts_an_overdue_card_today() -> None:
    old = SimCard(fsrs6.Memory(stability=3.0, difficulty=5.0, last_day=TODAY - timedelta(days=100)))
    assert simulate([old], 0, 0, TODAY, 0.9, days=2).per_day[0] >= 1


class WorkloadViewTests(TestCase):
    def test_it_shows_four_retentions_simulated_on_the_learners_cards(self) -> None:
        user = make_user(time_zone="UTC")
        profile = Profile.objects.get(user=user)
        make_cards(5)
        now = datetime(2026, 3, 10, 10, tzinfo=UTC)
        for _ in range(5):
            item = review.next_card(user, profile, now)[0]
            assert item is not None
            review.rate(user, profile, RatingRequest(item.card.uuid, 4, item.version), now)
        self.client.force_login(user)
        response = self.client.get(reverse("cards:workload"))
        self.assertEqual(response.status_code, 200)
        for retention in ("0.80", "0.85", "0.90", "0.95"):
            self.assertContains(response, f'data-retention="{retention}"')
        self.assertContains(response, "<svg")
