"""The FSRS fit on the worker: the package's optimizer (torch) on the reviews before the time split,
kept only when the held-out log loss improves. Slow: each fit takes seconds."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.test import TestCase

from cards import optimising
from cards.models import Optimisation, Profile, ReviewLog
from cards.scheduling import evaluate, fitting
from cards.scheduling.fsrs6 import EPOCH
from tests.cards.factories import make_card, make_user

FIXTURE = Path(__file__).resolve().parent / "cards" / "fixtures" / "revlog" / "revlog.csv"
QUALITY = {1: 1, 2: 3, 3: 4, 4: 5}


def fixture_reviews(scored: int) -> list[evaluate.Review]:
    """Whole cards of the evaluate fixture until about ``scored`` scored reviews."""
    with open(FIXTURE, encoding="utf-8", newline="") as handle:
        cards = evaluate.by_card(evaluate.read_revlog(handle))
    chosen: list[evaluate.Review] = []
    for history in cards.values():
        if len(fitting.scored_days(chosen)) >= scored:
            break
        chosen.extend(history)
    return chosen


def test_it_splits_by_time_and_trains_on_the_past_only() -> None:
    reviews = fixture_reviews(900)
    split = fitting.time_split(reviews)
    assert split is not None
    days = fitting.scored_days(reviews)
    assert split.train_reviews + split.test_reviews == len(days)
    assert split.train_reviews == sum(1 for d in days if d < split.day)
    assert 0.75 < split.train_reviews / len(days) <= 0.8


@pytest.mark.slow
class FitTests(TestCase):
    def setUp(self) -> None:
        self.user = make_user(time_zone="UTC", scheduler="fsrs")
        cards = {}
        rows = []
        for review in fixture_reviews(850):
            card = cards.get(review.card_id) or cards.setdefault(review.card_id, make_card())
            day = EPOCH.fromordinal(EPOCH.toordinal() + review.day)
            rows.append(
                ReviewLog(
                    user=self.user, card=card, quality=QUALITY[review.rating],
                    reviewed_at=datetime(day.year, day.month, day.day, 12, len(rows) % 60, tzinfo=UTC), review_day=day,
                    easiness_before=2.5, interval_before=0, repetitions_before=0, easiness_after=2.5,
                    interval_after=1, repetitions_after=1, due_after=day, was_new=False,
                )
            )  # fmt: skip
        ReviewLog.objects.bulk_create(rows)

    def test_it_keeps_better_parameters_and_then_refuses_the_same_ones(self) -> None:
        first = optimising.queue(self.user, datetime(2026, 3, 10, tzinfo=UTC))
        assert first is not None
        row = optimising.run(first.pk)
        assert row is not None
        self.assertEqual(row.status, "done", row.message)
        self.assertTrue(row.kept, row.message)
        self.assertLess(row.log_loss_after, row.log_loss_before)
        profile = Profile.objects.get(user=self.user)
        self.assertEqual((profile.fsrs_parameters, profile.fsrs_parameters_version), (row.parameters, 1))
        self.assertIsNone(optimising.run(first.pk))  # claimed once only
        # The same reviews fit the same parameters (the optimizer seeds its shuffle): no improvement, not kept.
        second = optimising.queue(self.user, datetime(2026, 3, 11, tzinfo=UTC))
        assert second is not None
        again = optimising.run(second.pk)
        assert again is not None
        self.assertFalse(again.kept, again.message)
        self.assertEqual(Profile.objects.get(user=self.user).fsrs_parameters_version, 1)
        self.assertEqual(Optimisation.objects.filter(user=self.user, status="done").count(), 2)
