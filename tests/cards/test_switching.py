"""FSRS as an opt-in scheduler: reviewing under it, previewing a switch, switching and switching back."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from django.test import TestCase
from django.urls import reverse

from cards import review, switching
from cards.models import Card, CardState, Profile, ReviewLog
from cards.review import Outcome, RatingRequest
from cards.scheduling import fsrs6
from tests.cards.factories import make_card, make_cards, make_user

NOW = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)  # 18:00 in Shanghai
TODAY = date(2026, 3, 10)


class FSRSCase(TestCase):
    def setUp(self) -> None:
        self.user = make_user(time_zone="Asia/Shanghai")
        self.profile = Profile.objects.get(user=self.user)

    def rate_next(self, quality: int, now: datetime = NOW) -> review.ReviewItem:
        item = review.next_card(self.user, self.profile, now)[0]
        assert item is not None
        outcome = review.rate(self.user, self.profile, RatingRequest(item.card.uuid, quality, item.version), now)
        self.assertEqual(outcome, Outcome.RECORDED)
        return item

    def use_fsrs(self) -> None:
        self.profile.scheduler = "fsrs"
        self.profile.save(update_fields=["scheduler"])


class ReviewUnderFSRSTests(FSRSCase):
    def test_it_labels_the_buttons_with_fsrs_intervals(self) -> None:
        make_card()
        self.use_fsrs()
        item = review.next_card(self.user, self.profile, NOW)[0]
        assert item is not None
        self.assertEqual([b["hint"] for b in item.buttons()], ["today · 1d", "1d", "2d", "8d"])

    def test_it_keeps_sm2_labels_for_an_sm2_learner(self) -> None:
        make_card()
        item = review.next_card(self.user, self.profile, NOW)[0]
        assert item is not None
        self.assertEqual([b["hint"] for b in item.buttons()], ["today · 1d", "today · 1d", "1d", "1d"])

    def test_it_stores_fsrs_state_and_due_day_and_logs_the_scheduler(self) -> None:
        card = make_card()
        self.use_fsrs()
        self.rate_next(4)
        state = CardState.objects.get(user=self.user, card=card)
        self.assertEqual(state.due, TODAY + timedelta(days=2))
        self.assertAlmostEqual(state.stability, 2.3065)
        self.assertFalse(state.needs_repeat)
        # SM-2's state moved as SM-2 would move it.
        self.assertEqual((state.interval, state.repetitions, state.easiness), (1, 1, Decimal("2.50")))
        log = ReviewLog.objects.get(user=self.user)
        self.assertEqual(
            (log.scheduler, log.parameters_version, log.elapsed_days, log.scheduled_days), ("fsrs", 0, None, None)
        )

    def test_it_records_elapsed_and_scheduled_days_of_a_due_review(self) -> None:
        make_card()
        self.use_fsrs()
        self.rate_next(4)  # Good on a new card: due in 2 days
        self.rate_next(4, NOW + timedelta(days=3))
        log = ReviewLog.objects.filter(user=self.user).latest("reviewed_at")
        self.assertEqual((log.elapsed_days, log.scheduled_days, log.scheduler), (3, 2, "fsrs"))

    def test_it_brings_only_again_back_today_and_reschedules_the_repeat(self) -> None:
        card = make_card()
        self.use_fsrs()
        self.rate_next(1)
        state = CardState.objects.get(user=self.user, card=card)
        self.assertTrue(state.needs_repeat)
        item = self.rate_next(4, NOW + timedelta(minutes=10))
        self.assertEqual(item.queue, "repeat")
        state.refresh_from_db()
        self.assertFalse(state.needs_repeat)
        self.assertGreater(state.stability, fsrs6.DEFAULT_RETENTION * 0)  # a short-term review moved it
        self.assertEqual(state.repetitions, 0)  # ... while SM-2's same-day repeat changed nothing

    def test_it_clears_the_fsrs_state_when_an_sm2_review_would_leave_it_stale(self) -> None:
        card = make_card()
        self.use_fsrs()
        self.rate_next(4)
        self.profile.scheduler = "sm2"
        self.profile.save(update_fields=["scheduler"])
        self.rate_next(4, NOW + timedelta(days=2))
        state = CardState.objects.get(user=self.user, card=card)
        self.assertIsNone(state.stability)
        self.assertEqual((state.interval, state.due), (6, TODAY + timedelta(days=8)))

    def test_it_undoes_an_fsrs_review_exactly(self) -> None:
        card = make_card()
        self.use_fsrs()
        self.rate_next(4)
        before = CardState.objects.values("stability", "difficulty", "due").get(user=self.user, card=card)
        self.rate_next(3, NOW + timedelta(days=2))
        self.assertIsNotNone(review.undo_last(self.user, self.profile, NOW + timedelta(days=2)))
        after = CardState.objects.values("stability", "difficulty", "due").get(user=self.user, card=card)
        self.assertEqual(after, before)

    def test_it_computes_a_missing_fsrs_state_from_the_history_on_rating(self) -> None:
        card = make_card()
        self.rate_next(4)  # under SM-2: no FSRS state
        self.use_fsrs()
        self.rate_next(4, NOW + timedelta(days=1))
        state = CardState.objects.get(user=self.user, card=card)
        replayed = fsrs6.from_history(fsrs6.scheduler(), [(TODAY, 4), (TODAY + timedelta(days=1), 4)])
        assert replayed is not None
        self.assertAlmostEqual(state.stability, replayed.stability)


class SwitchTests(FSRSCase):
    def review_history(self, cards: int = 12) -> None:
        """Each card seen on day 0 and again on its due day, under SM-2."""
        self.profile.new_cards_per_day = cards
        self.profile.save(update_fields=["new_cards_per_day"])
        make_cards(cards)
        for _ in range(cards):
            self.rate_next(4)
        for _ in range(cards):
            self.rate_next(5, NOW + timedelta(days=1))

    def test_it_previews_without_writing_and_switches_to_exactly_the_preview(self) -> None:
        self.review_history()
        versions = list(CardState.objects.order_by("pk").values_list("version", flat=True))
        plan = switching.plan_switch(self.user, self.profile, "fsrs", NOW + timedelta(days=5))
        self.assertEqual((plan.cards, plan.from_history, plan.from_sm2), (12, 12, 0))
        self.assertEqual(list(CardState.objects.order_by("pk").values_list("version", flat=True)), versions)
        applied = switching.switch_scheduler(self.user, self.profile, "fsrs", NOW + timedelta(days=5))
        self.assertEqual(applied.changes, plan.changes)
        self.profile.refresh_from_db()
        self.assertEqual(self.profile.scheduler, "fsrs")
        for state in CardState.objects.filter(user=self.user):
            self.assertEqual((state.stability, state.difficulty, state.due), plan.changes[state.pk])
            self.assertEqual(state.interval, 6)  # SM-2's state untouched

    def test_it_spreads_the_backlog_a_switch_creates_over_at_most_seven_days(self) -> None:
        self.review_history(30)
        # Four days on SM-2 has them due on day 7, while at 0.99 retention FSRS has them all due already.
        self.profile.desired_retention = Decimal("0.99")
        self.profile.save(update_fields=["desired_retention"])
        later = NOW + timedelta(days=4)
        plan = switching.plan_switch(self.user, self.profile, "fsrs", later)
        self.assertEqual(plan.backlog, 30)
        self.assertEqual(plan.due_today_before, 0)
        self.assertEqual([day.after for day in plan.days], [5, 5, 5, 5, 5, 5, 0])
        self.assertEqual(sum(day.before for day in plan.days), 30)

    def test_it_uses_sm2_ease_and_interval_where_a_card_has_no_history(self) -> None:
        card = make_card()
        CardState.objects.create(
            user=self.user,
            card=card,
            easiness=Decimal("2.30"),
            interval=20,
            repetitions=4,
            due=TODAY + timedelta(days=10),
            last_reviewed_at=NOW - timedelta(days=10),
            last_review_day=TODAY - timedelta(days=10),
            version=4,
        )
        plan = switching.plan_switch(self.user, self.profile, "fsrs", NOW)
        self.assertEqual((plan.from_history, plan.from_sm2, plan.backlog), (0, 1, 0))
        stability, _, due = next(iter(plan.changes.values()))
        self.assertAlmostEqual(stability, 20)
        self.assertEqual(due, TODAY + timedelta(days=10))

    def test_it_switches_back_to_sm2_due_days_and_keeps_sm2_state(self) -> None:
        self.review_history(3)
        switching.switch_scheduler(self.user, self.profile, "fsrs", NOW + timedelta(days=1))
        sm2_before = list(CardState.objects.order_by("pk").values_list("easiness", "interval", "repetitions"))
        switching.switch_scheduler(self.user, self.profile, "sm2", NOW + timedelta(days=2))
        self.profile.refresh_from_db()
        self.assertEqual(self.profile.scheduler, "sm2")
        states = CardState.objects.order_by("pk")
        self.assertEqual(list(states.values_list("easiness", "interval", "repetitions")), sm2_before)
        self.assertEqual({s.due for s in states}, {TODAY + timedelta(days=7)})  # day 1 + SM-2's 6 days


class SwitchViewTests(FSRSCase):
    def setUp(self) -> None:
        super().setUp()
        self.client.force_login(self.user)

    def test_it_shows_the_switch_on_the_settings_page(self) -> None:
        response = self.client.get(reverse("cards:settings"))
        self.assertContains(response, 'data-scheduler="sm2"')
        self.assertContains(response, reverse("cards:switch_scheduler") + "?to=fsrs")

    def test_it_previews_on_get_and_switches_on_post(self) -> None:
        make_card()
        review.rate(
            self.user,
            self.profile,
            RatingRequest(review.next_card(self.user, self.profile, NOW)[0].card.uuid, 4, 0),
            NOW,
        )
        response = self.client.get(reverse("cards:switch_scheduler"), {"to": "fsrs"})
        self.assertContains(response, "Switch to FSRS-6")
        self.assertContains(response, 'data-backlog="')
        self.assertEqual(Profile.objects.get(user=self.user).scheduler, "sm2")
        response = self.client.post(reverse("cards:switch_scheduler"), {"to": "fsrs"})
        self.assertRedirects(response, reverse("cards:settings"))
        self.assertEqual(Profile.objects.get(user=self.user).scheduler, "fsrs")
        self.assertIsNotNone(CardState.objects.get(user=self.user).stability)

    def test_it_refuses_an_unknown_scheduler(self) -> None:
        self.assertEqual(self.client.get(reverse("cards:switch_scheduler"), {"to": "anki"}).status_code, 400)
        self.assertEqual(self.client.post(reverse("cards:switch_scheduler"), {"to": "anki"}).status_code, 400)
        self.assertEqual(Profile.objects.get(user=self.user).scheduler, "sm2")

    def test_it_saves_a_desired_retention_in_range_only(self) -> None:
        data = {"time_zone": "Asia/Shanghai", "day_start_hour": 4, "new_cards_per_day": 20, "reviews_per_day": 200}
        self.client.post(reverse("cards:settings"), {**data, "desired_retention": "0.85"})
        self.assertEqual(Profile.objects.get(user=self.user).desired_retention, Decimal("0.85"))
        response = self.client.post(reverse("cards:settings"), {**data, "desired_retention": "0.5"})
        self.assertContains(response, "Pick a retention from 0.70 to 0.99")


class VerdictUnderFSRSTests(FSRSCase):
    def test_it_rates_a_drill_verdict_as_the_fsrs_rating_of_its_quality(self) -> None:
        self.use_fsrs()
        self.user = type(self.user).objects.get(pk=self.user.pk)  # as the grader's task loads it
        for quality, rating_stability in ((5, 8.2956), (4, 2.3065), (3, 1.2931), (2, 0.212), (0, 0.212)):
            card = make_card(kind=Card.Kind.DRILL)
            self.assertEqual(review.record_graded(self.user, card, quality, NOW), Outcome.RECORDED)
            state = CardState.objects.get(user=self.user, card=card)
            self.assertAlmostEqual(state.stability, rating_stability)
            self.assertEqual(ReviewLog.objects.get(user=self.user, card=card).source, "grader")
