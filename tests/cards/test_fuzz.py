"""Fuzz and load balancing: inside Anki's fuzz range, the least busy day, away from siblings."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta

from django.test import TestCase
from hypothesis import given
from hypothesis import strategies as st

from cards import review
from cards.models import CardState, Profile
from cards.review import RatingRequest
from cards.scheduling.fuzz import balanced_interval, fuzz_range
from tests.cards.factories import make_card, make_note, make_user

TODAY = date(2026, 3, 10)
NOW = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)


def test_it_leaves_short_intervals_alone_and_widens_with_the_interval() -> None:
    assert [fuzz_range(n) for n in (1, 2)] == [(1, 1), (2, 2)]
    assert fuzz_range(6) == (4, 8)  # 1 + 0.15 * 3.5 = 1.525 either side
    assert fuzz_range(30) == (27, 33)  # 1 + 0.675 + 1.3 + 0.5 = 3.475 either side
    assert fuzz_range(100, maximum=102) == (93, 102)


@given(st.integers(min_value=1, max_value=5000), st.integers(min_value=0, max_value=2**32))
def test_it_always_picks_a_day_inside_the_range(interval: int, seed: int) -> None:
    low, high = fuzz_range(interval)
    assert low <= interval <= high
    assert low <= balanced_interval(interval, TODAY, {}, (), random.Random(seed)) <= high


def test_it_picks_the_least_busy_day() -> None:
    load = {TODAY + timedelta(days=d): 10 for d in range(4, 9)}
    load[TODAY + timedelta(days=7)] = 2
    assert balanced_interval(6, TODAY, load, (), random.Random(1)) == 7


def test_it_avoids_a_siblings_day_unless_every_day_has_one() -> None:
    everywhere = {TODAY + timedelta(days=d) for d in range(4, 9)}
    assert balanced_interval(6, TODAY, {}, everywhere - {TODAY + timedelta(days=5)}, random.Random(2)) == 5
    assert 4 <= balanced_interval(6, TODAY, {}, everywhere, random.Random(2)) <= 8


def test_it_spreads_cards_learned_together() -> None:
    rng = random.Random(3)
    days = {balanced_interval(30, TODAY, {}, (), rng) for _ in range(50)}
    assert len(days) > 5


class FuzzedReviewTests(TestCase):
    def setUp(self) -> None:
        self.user = make_user(time_zone="UTC", fuzz=True)
        self.profile = Profile.objects.get(user=self.user)
        self.note = make_note()

    def seen(self, card: object, due: date, **fields: object) -> CardState:
        defaults = {"interval": 6, "repetitions": 2, "last_reviewed_at": NOW - timedelta(days=6), "version": 3}
        return CardState.objects.create(
            user=self.user, card=card, due=due, last_review_day=TODAY - timedelta(days=6), **{**defaults, **fields}
        )

    def test_it_moves_the_due_day_to_a_free_one_and_keeps_sm2_exact(self) -> None:
        card = make_card(note=self.note)
        state = self.seen(card, TODAY)
        # Every day of 6 * 2.5 = 15's range (13..17) is busy but the 16th.
        for offset in (13, 14, 15, 17):
            for _ in range(3):
                self.seen(make_card(note=self.note), TODAY + timedelta(days=offset))
        review.rate(self.user, self.profile, RatingRequest(card.uuid, 4, state.version), NOW)
        state.refresh_from_db()
        self.assertEqual(state.interval, 15)  # SM-2's own interval, exact
        self.assertEqual(state.due, TODAY + timedelta(days=16))

    def test_it_keeps_a_sibling_off_the_same_day(self) -> None:
        card = make_card(note=self.note, anchor="shape")
        state = self.seen(card, TODAY)
        sibling = make_card(note=self.note, anchor="shape")
        for offset in (13, 14, 15, 16):
            self.seen(make_card(note=self.note), TODAY + timedelta(days=offset))
        self.seen(sibling, TODAY + timedelta(days=17))
        review.rate(self.user, self.profile, RatingRequest(card.uuid, 4, state.version), NOW)
        state.refresh_from_db()
        self.assertNotEqual(state.due, TODAY + timedelta(days=17))

    def test_it_leaves_sm2_exact_with_fuzz_off(self) -> None:
        self.profile.fuzz = False
        self.profile.save(update_fields=["fuzz"])
        card = make_card(note=self.note)
        state = self.seen(card, TODAY)
        for _ in range(5):
            self.seen(make_card(note=self.note), TODAY + timedelta(days=15))
        review.rate(self.user, self.profile, RatingRequest(card.uuid, 4, state.version), NOW)
        state.refresh_from_db()
        self.assertEqual(state.due, TODAY + timedelta(days=15))
