"""When a learner's FSRS fit is due, asking for one, and what the settings page says (no torch here:
the fit itself is tested in tests/test_fsrs_fit.py)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from django.test import TestCase
from django.urls import reverse

from cards import optimising, tasks
from cards.models import Optimisation, ReviewLog
from cards.scheduling import evaluate, fitting
from tests.cards.factories import make_card, make_user

NOW = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)


def log_reviews(user: object, cards: int, reviews_each: int, start: date = date(2026, 1, 1)) -> None:
    """Each card reviewed Good every other day: ``cards * (reviews_each - 1)`` scored reviews."""
    rows = []
    for card in [make_card() for _ in range(cards)]:
        for k in range(reviews_each):
            day = start + timedelta(days=2 * k)
            rows.append(
                ReviewLog(
                    user=user, card=card, quality=4, reviewed_at=datetime.combine(day, datetime.min.time(), UTC),
                    review_day=day, easiness_before=2.5, interval_before=0, repetitions_before=0,
                    easiness_after=2.5, interval_after=1, repetitions_after=1, due_after=day, was_new=k == 0,
                )
            )  # fmt: skip
    ReviewLog.objects.bulk_create(rows)


class DueTests(TestCase):
    def setUp(self) -> None:
        self.user = make_user(time_zone="UTC", scheduler="fsrs")

    def test_it_waits_for_the_packages_minimum(self) -> None:
        log_reviews(self.user, cards=10, reviews_each=6)  # 50 scored
        self.assertEqual(optimising.scored_count(self.user.pk), 50)
        self.assertFalse(optimising.is_due(self.user.pk, NOW))
        log_reviews(self.user, cards=100, reviews_each=6)  # 550 scored: under 640
        self.assertFalse(optimising.is_due(self.user.pk, NOW))
        log_reviews(self.user, cards=20, reviews_each=6)  # 650
        self.assertTrue(optimising.is_due(self.user.pk, NOW))

    def test_it_runs_again_when_the_reviews_doubled_or_a_month_passed(self) -> None:
        log_reviews(self.user, cards=130, reviews_each=6)  # 650
        Optimisation.objects.create(user=self.user, created_at=NOW, status="done", reviews=650)
        self.assertFalse(optimising.is_due(self.user.pk, NOW + timedelta(days=29)))
        self.assertTrue(optimising.is_due(self.user.pk, NOW + timedelta(days=30)))
        log_reviews(self.user, cards=130, reviews_each=6)  # 1300: doubled
        self.assertTrue(optimising.is_due(self.user.pk, NOW + timedelta(days=1)))

    def test_it_keeps_one_fit_active_per_learner_and_enqueues_after_commit(self) -> None:
        with self.captureOnCommitCallbacks() as callbacks:
            first = tasks.request_optimisation(self.user, NOW)
            second = tasks.request_optimisation(self.user, NOW)
        self.assertIsNotNone(first)
        self.assertIsNone(second)
        self.assertEqual(len(callbacks), 1)
        self.assertFalse(optimising.is_due(self.user.pk, NOW + timedelta(days=60)))

    def test_it_reads_the_log_as_the_scoring_does(self) -> None:
        log_reviews(self.user, cards=2, reviews_each=3)
        reviews = optimising.learner_reviews(self.user.pk)
        self.assertEqual({r.rating for r in reviews}, {3})
        self.assertEqual(evaluate.evaluate(reviews)["n"], 4)

    def test_it_says_default_parameters_below_the_minimum(self) -> None:
        outcome = fitting.optimise(optimising.learner_reviews(self.user.pk), None)
        self.assertFalse(outcome.keep)
        self.assertEqual(
            outcome.message,
            "Default parameters until 640 reviews (0 so far): "
            "the fit learns from the earlier 80% of them and needs 512.",
        )


class SettingsOptimisationTests(TestCase):
    def setUp(self) -> None:
        self.user = make_user(time_zone="UTC")
        self.client.force_login(self.user)

    def test_it_shows_never_fitted_and_queues_a_fit_on_request(self) -> None:
        self.assertContains(self.client.get(reverse("cards:settings")), 'data-optimisation="none"')
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            response = self.client.post(reverse("cards:optimise"))
        self.assertRedirects(response, reverse("cards:settings"))
        self.assertEqual(len(callbacks), 1)
        self.assertEqual(Optimisation.objects.get(user=self.user).status, "queued")
        self.assertContains(self.client.get(reverse("cards:settings")), 'data-optimisation="queued"')

    def test_it_shows_what_the_last_fit_changed(self) -> None:
        Optimisation.objects.create(
            user=self.user, created_at=NOW, finished_at=NOW, status="done", kept=True,
            message="Held-out log loss 0.6688 -> 0.6550 on 337 reviews; new parameters kept.",
        )  # fmt: skip
        response = self.client.get(reverse("cards:settings"))
        self.assertContains(response, "0.6688 -&gt; 0.6550 on 337 reviews; new parameters kept.")
