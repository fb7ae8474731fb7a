"""Database guarantees on the review models: the constraints hold even when code forgets."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.test import TestCase

from cards.models import CardState, Profile, ReviewLog, validate_time_zone
from tests.cards.factories import make_card, make_user

DAY = date(2026, 3, 10)


def log_fields(**overrides: object) -> dict[str, object]:
    fields: dict[str, object] = {
        "quality": 4,
        "reviewed_at": datetime(2026, 3, 10, 10, tzinfo=UTC),
        "review_day": DAY,
        "easiness_before": Decimal("2.50"),
        "interval_before": 0,
        "repetitions_before": 0,
        "easiness_after": Decimal("2.50"),
        "interval_after": 1,
        "repetitions_after": 1,
        "due_after": DAY,
    }
    return {**fields, **overrides}


class ConstraintTests(TestCase):
    def setUp(self) -> None:
        self.user = make_user()
        self.card = make_card()

    def assert_refused(self, create: object) -> None:
        with self.assertRaises(IntegrityError), transaction.atomic():
            create()

    def test_it_keeps_one_state_per_user_and_card(self) -> None:
        CardState.objects.create(user=self.user, card=self.card, due=DAY)
        self.assert_refused(lambda: CardState.objects.create(user=self.user, card=self.card, due=DAY))
        CardState.objects.create(user=make_user(), card=self.card, due=DAY)
        self.assertEqual(CardState.objects.count(), 2)

    def test_it_refuses_an_easiness_below_sm2s_floor(self) -> None:
        self.assert_refused(
            lambda: CardState.objects.create(user=self.user, card=self.card, due=DAY, easiness=Decimal("1.29"))
        )
        state = CardState.objects.create(user=self.user, card=self.card, due=DAY, easiness=Decimal("1.30"))
        state.refresh_from_db()
        self.assertEqual(state.easiness, Decimal("1.30"))

    def test_it_refuses_a_quality_above_five(self) -> None:
        self.assert_refused(lambda: ReviewLog.objects.create(user=self.user, card=self.card, **log_fields(quality=6)))
        for quality in range(6):
            ReviewLog.objects.create(user=self.user, card=self.card, **log_fields(quality=quality))
        self.assertEqual(ReviewLog.objects.count(), 6)

    def test_it_refuses_an_unknown_source(self) -> None:
        self.assert_refused(lambda: ReviewLog.objects.create(user=self.user, card=self.card, **log_fields(source="x")))

    def test_it_refuses_profile_values_out_of_range(self) -> None:
        for field, value in (("day_start_hour", 24), ("new_cards_per_day", 1001), ("reviews_per_day", 10001)):
            self.assert_refused(lambda f=field, v=value: Profile.objects.create(user=make_user(), **{f: v}))
        self.assertFalse(Profile.objects.exists())


class PlainModelTests(TestCase):
    def test_it_treats_a_never_reviewed_state_as_new(self) -> None:
        self.assertTrue(CardState(due=DAY).is_new)
        self.assertFalse(CardState(due=DAY, last_reviewed_at=datetime(2026, 3, 1, tzinfo=UTC)).is_new)

    def test_it_validates_time_zones_by_iana_name(self) -> None:
        validate_time_zone("Asia/Shanghai")
        for bad in ("Mars/Olympus", "", "../etc/passwd"):
            with self.assertRaises(ValidationError):
                validate_time_zone(bad)

    def test_it_defaults_the_profile_to_the_site_time_zone(self) -> None:
        with self.settings(TIME_ZONE="Asia/Shanghai"):
            self.assertEqual(Profile().time_zone, "Asia/Shanghai")
        self.assertEqual(Profile().zone.key, "UTC")
