"""The review domain: the learner's day, the three queues, rating, undo, suspend and bury."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from unittest import mock

from django.test import TestCase
from django.urls import reverse
from rest_framework.test import APIClient

from cards import review
from cards.forms import SettingsForm
from cards.models import Card, CardState, Profile, ReviewLog
from cards.review import Outcome, RatingRequest, learner_today
from tests.cards.factories import make_card, make_cards, make_note, make_user

# 10:00 UTC is 18:00 in Shanghai: comfortably inside the learner's 2026-03-10.
NOW = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)
TODAY = date(2026, 3, 10)


class ReviewCase(TestCase):
    def setUp(self) -> None:
        self.user = make_user(time_zone="Asia/Shanghai")
        self.profile = Profile.objects.get(user=self.user)

    def next_item(self, now: datetime = NOW) -> review.ReviewItem | None:
        return review.next_card(self.user, self.profile, now)[0]

    def rate_next(self, quality: int, now: datetime = NOW) -> review.ReviewItem:
        item = self.next_item(now)
        assert item is not None
        outcome = review.rate(self.user, self.profile, RatingRequest(item.card.uuid, quality, item.version), now)
        self.assertEqual(outcome, Outcome.RECORDED)
        return item

    def seen(self, card: object, due: date, **fields: object) -> CardState:
        """A state as if the card had been reviewed before and is due on ``due``."""
        defaults = {"interval": 6, "repetitions": 2, "last_reviewed_at": NOW - timedelta(days=6), "version": 3}
        return CardState.objects.create(user=self.user, card=card, due=due, **{**defaults, **fields})


class LearnerTodayTests(TestCase):
    def test_it_starts_the_day_at_four_in_the_learners_zone(self) -> None:
        profile = Profile(time_zone="Asia/Shanghai", day_start_hour=4)
        # 19:59 UTC on the 10th is 03:59 on the 11th in Shanghai: still the 10th for the learner.
        self.assertEqual(learner_today(profile, datetime(2026, 3, 10, 19, 59, tzinfo=UTC)), date(2026, 3, 10))
        self.assertEqual(learner_today(profile, datetime(2026, 3, 10, 20, 0, tzinfo=UTC)), date(2026, 3, 11))

    def test_it_honours_another_start_hour_and_zone(self) -> None:
        profile = Profile(time_zone="America/New_York", day_start_hour=0)
        # 03:30 UTC on the 10th is 23:30 on the 9th in New York (EDT starts on the 8th).
        self.assertEqual(learner_today(profile, datetime(2026, 3, 10, 3, 30, tzinfo=UTC)), date(2026, 3, 9))

    def test_it_rejects_a_naive_datetime(self) -> None:
        with self.assertRaises(ValueError):
            learner_today(Profile(), datetime(2026, 3, 10, 10, 0))  # noqa: DTZ001

    def test_a_day_once_begun_stays_when_the_learner_moves_the_zone_west(self) -> None:
        """Moving the zone reopened a day already over: its XP a second time, a broken streak mended."""
        user = make_user(time_zone="Asia/Shanghai")
        profile = Profile.objects.get(user=user)
        card, other = make_card(), make_card()
        at_nine = datetime(2026, 3, 10, 1, 0, tzinfo=UTC)  # 09:00 on the 10th in Shanghai, the 9th in Honolulu
        self.assertEqual(review.rate(user, profile, RatingRequest(card.uuid, 5, 0), at_nine), Outcome.RECORDED)
        form = SettingsForm(
            {**SettingsForm(instance=profile).initial, "time_zone": "Pacific/Honolulu"}, instance=profile
        )
        with mock.patch("django.utils.timezone.now", return_value=at_nine + timedelta(minutes=5)):
            self.assertTrue(form.is_valid(), form.errors)
            form.save()
        profile = Profile.objects.get(user=user)
        later = at_nine + timedelta(hours=1)  # 15:00 on the 9th in Honolulu
        self.assertEqual((profile.day_floor, learner_today(profile, later)), (date(2026, 3, 10), date(2026, 3, 10)))
        self.assertEqual(review.rate(user, profile, RatingRequest(other.uuid, 5, 0), later), Outcome.RECORDED)
        self.assertEqual(set(ReviewLog.objects.values_list("review_day", flat=True)), {date(2026, 3, 10)})
        # The zone's own clock takes over once it reaches the pinned day: 04:00 on the 11th in Honolulu.
        self.assertEqual(learner_today(profile, datetime(2026, 3, 11, 14, 0, tzinfo=UTC)), date(2026, 3, 11))

    def test_a_change_of_anything_else_pins_nothing(self) -> None:
        profile = Profile.objects.get(user=make_user(time_zone="Asia/Shanghai"))
        profile.new_cards_per_day = 5
        profile.save()
        profile.fuzz = True
        profile.save(update_fields=["fuzz"])
        profile.refresh_from_db()
        self.assertIsNone(profile.day_floor)

    def test_it_creates_a_profile_with_the_defaults_on_demand(self) -> None:
        user = make_user()
        profile = review.get_profile(user)
        profile.refresh_from_db()
        self.assertEqual(
            (profile.time_zone, profile.new_cards_per_day, profile.reviews_per_day, profile.day_start_hour),
            ("UTC", 20, 200, 4),
        )


class QueueTests(ReviewCase):
    def test_it_shows_the_most_overdue_card_first_then_new_cards(self) -> None:
        note = make_note()
        fresh, old, new = make_card(note=note), make_card(note=note), make_card(note=note)
        self.seen(fresh, TODAY)
        self.seen(old, TODAY - timedelta(days=5))
        self.seen(make_card(note=note), TODAY + timedelta(days=1))  # not due yet
        order = []
        for _ in range(3):
            item = self.rate_next(5)
            order.append((item.card.pk, item.queue))
        self.assertEqual(order, [(old.pk, "due"), (fresh.pk, "due"), (new.pk, "new")])
        self.assertIsNone(self.next_item())

    def test_it_stops_new_cards_at_the_daily_limit(self) -> None:
        Profile.objects.filter(pk=self.profile.pk).update(new_cards_per_day=2)
        self.profile.refresh_from_db()
        make_cards(4)
        self.rate_next(5)
        self.rate_next(5)
        item, snap = review.next_card(self.user, self.profile, NOW)
        self.assertIsNone(item)
        self.assertEqual((snap.new, snap.reviewed_today), (0, 2))
        # The next learner day brings two more.
        tomorrow = NOW + timedelta(days=1)
        self.assertEqual(review.next_card(self.user, self.profile, tomorrow)[1].new, 2)

    def test_it_stops_due_reviews_at_the_daily_limit(self) -> None:
        Profile.objects.filter(pk=self.profile.pk).update(reviews_per_day=1, new_cards_per_day=0)
        self.profile.refresh_from_db()
        for card in make_cards(3):
            self.seen(card, TODAY)
        self.assertEqual(review.next_card(self.user, self.profile, NOW)[1].due, 1)
        self.rate_next(4)
        item, snap = review.next_card(self.user, self.profile, NOW)
        self.assertIsNone(item)
        self.assertEqual(snap.due, 0)

    def test_it_counts_the_day_from_four_in_the_morning(self) -> None:
        card = make_card()
        self.seen(card, date(2026, 3, 11))
        # 03:59 on the 11th in Shanghai is still the 10th: not due; at 04:00 it is.
        before, at = datetime(2026, 3, 10, 19, 59, tzinfo=UTC), datetime(2026, 3, 10, 20, 0, tzinfo=UTC)
        Profile.objects.filter(pk=self.profile.pk).update(new_cards_per_day=0)
        self.profile.refresh_from_db()
        self.assertIsNone(self.next_item(before))
        self.assertEqual(self.next_item(at).card, card)

    def test_it_leaves_out_suspended_buried_and_inactive_cards(self) -> None:
        suspended, buried, inactive, new = make_cards(4)
        review.suspend(self.user, self.profile, suspended, NOW)
        review.bury(self.user, self.profile, buried, NOW)
        inactive.active = False
        inactive.save(update_fields=["active"])
        item, snap = review.next_card(self.user, self.profile, NOW)
        self.assertEqual((item.card, snap.new), (new, 1))
        # A buried card is back on the next learner day; a suspended one is not.
        tomorrow = review.next_card(self.user, self.profile, NOW + timedelta(days=1))[1]
        self.assertEqual(tomorrow.new, 2)

    def test_it_repeats_cards_rated_below_four_without_changing_sm2(self) -> None:
        card = make_card()
        self.rate_next(1)  # new card, Again: SM-2 runs once
        state = CardState.objects.get(user=self.user, card=card)
        sm2_after_first = (state.easiness, state.interval, state.repetitions, state.due)
        self.assertEqual(sm2_after_first, (Decimal("1.96"), 1, 0, TODAY + timedelta(days=1)))
        item = self.rate_next(3)  # same-day repeat, Hard: still below 4, stays in the repeat queue
        self.assertEqual(item.queue, "repeat")
        item = self.rate_next(4)  # Good: leaves the repeat queue
        self.assertEqual(item.queue, "repeat")
        self.assertIsNone(self.next_item())
        state.refresh_from_db()
        self.assertEqual((state.easiness, state.interval, state.repetitions, state.due), sm2_after_first)
        self.assertFalse(state.needs_repeat)
        logs = list(ReviewLog.objects.order_by("pk").values_list("quality", "is_same_day_repeat", "was_new"))
        self.assertEqual(logs, [(1, False, True), (3, True, False), (4, True, False)])

    def test_it_labels_the_buttons_with_sm2_intervals(self) -> None:
        card = make_card()
        self.seen(card, TODAY, interval=6, repetitions=2, easiness=Decimal("1.50"))
        item = self.next_item()
        self.assertEqual([b["hint"] for b in item.buttons()], ["today · 1d", "today · 9d", "9d", "9d"])
        self.assertEqual([b["rating"] for b in item.buttons()], [1, 3, 4, 5])


def mapping_row(note: object, left: str, right: str, note_text: str = "") -> tuple[Card, Card]:
    """The two cards one row of a NumPy | PyTorch table gives, as the importer writes them."""
    extra = f"\n\n{note_text}" if note_text else ""
    forward, reverse = (
        make_card(
            note=note,
            kind=Card.Kind.MAPPING,
            anchor="table",
            front=f"{labels}: `{asked}` 对应什么？",
            back=f"`{answer}`{extra}",
        )
        for labels, asked, answer in (("Numpy → PyTorch", left, right), ("PyTorch → Numpy", right, left))
    )
    return forward, reverse


class SiblingTests(ReviewCase):
    """Bury-siblings: the two directions of one mapping row never come on one day; a section's other
    cards (questions, clozes, snippets, other rows) are not siblings and come as usual."""

    def test_a_sections_other_cards_come_the_same_day(self) -> None:
        note = make_note()
        first, second = make_card(note=note, anchor="nllloss"), make_card(note=note, anchor="nllloss")
        output = make_card(note=note, anchor="nllloss", kind=Card.Kind.OUTPUT)
        self.assertEqual([self.rate_next(4).card for _ in range(3)], [first, second, output])

    def test_a_due_direction_buries_the_new_one_until_tomorrow_and_the_count_says_so(self) -> None:
        note = make_note()
        less, lt = mapping_row(note, "np.less", "x.lt")
        greater, gt = mapping_row(note, "np.greater", "x.gt")
        self.seen(lt, TODAY - timedelta(days=1))
        snap = review.next_card(self.user, self.profile, NOW)[1]
        self.assertEqual((snap.due, snap.new), (1, 1))  # x.lt; np.greater (np.less and x.gt have a sibling before)
        self.assertEqual(self.rate_next(1).card, lt)  # due first
        self.assertEqual(self.rate_next(4).card, greater)  # np.less waits for tomorrow
        self.assertEqual(self.rate_next(4).card, lt)  # the same-day repeat of the card answered
        self.assertIsNone(self.next_item())  # x.gt is greater's sibling
        snap = review.next_card(self.user, self.profile, NOW + timedelta(days=1))[1]
        self.assertEqual((snap.due, snap.new), (2, 0))  # x.lt and np.greater are due: their siblings wait again

    def test_two_new_directions_count_once_and_the_first_comes(self) -> None:
        note = make_note()
        forward, reverse = mapping_row(note, "np.tile(x, 2)", "x.repeat(2)", note_text="整体平铺")
        snap = review.next_card(self.user, self.profile, NOW)[1]
        self.assertEqual(snap.new, 1)
        self.assertEqual(self.rate_next(4).card, forward)
        self.assertIsNone(self.next_item())
        tomorrow = review.next_card(self.user, self.profile, NOW + timedelta(days=1))
        self.assertEqual((tomorrow[0].card if tomorrow[0] else None, tomorrow[1].new), (forward, 0))  # due first
        self.assertEqual(self.rate_next(4, NOW + timedelta(days=1)).card, forward)
        self.assertEqual(self.rate_next(4, NOW + timedelta(days=2)).card, reverse)  # forward is due in 6 days

    def test_two_due_directions_count_once_and_the_more_overdue_comes(self) -> None:
        forward, reverse = mapping_row(make_note(), "np.less", "x.lt")
        self.seen(forward, TODAY), self.seen(reverse, TODAY - timedelta(days=2))
        self.assertEqual(review.next_card(self.user, self.profile, NOW)[1].due, 1)
        self.assertEqual(self.rate_next(4).card, reverse)
        self.assertIsNone(self.next_item())

    def test_rows_of_other_notes_are_not_siblings(self) -> None:
        mapping_row(make_note(), "np.less", "x.lt")
        mapping_row(make_note(), "np.less", "x.lt")
        self.assertEqual(review.next_card(self.user, self.profile, NOW)[1].new, 2)


class TruthfulLabelTests(ReviewCase):
    """Each button's label is what rating with it then does, read back from the queue and the state."""

    def observed(self, rating: int) -> str:
        """Rate the card on show with ``rating``, then describe what happened as a label would."""
        item = self.rate_next(rating)
        back_today = (again := self.next_item()) is not None and again.card == item.card
        if back_today and item.queue == "repeat":
            return "today"
        state = CardState.objects.get(user=self.user, card=item.card)
        days = review._days((state.due - TODAY).days)
        return f"today · {days}" if back_today else days

    def check_labels(self, prepare: object) -> None:
        for button in range(4):
            with self.subTest(button=button):
                self.user = make_user(time_zone="Asia/Shanghai")
                self.profile = Profile.objects.get(user=self.user)
                Card.objects.update(active=False)  # only this subtest's card is in the queue
                prepare(make_card())
                shown = self.next_item()
                assert shown is not None
                label = shown.buttons()[button]
                self.assertEqual(label["hint"], self.observed(label["rating"]))

    def test_new_cards(self) -> None:
        self.check_labels(lambda card: None)

    def test_cards_in_review(self) -> None:
        self.check_labels(lambda card: self.seen(card, TODAY, interval=6, repetitions=2, easiness=Decimal("2.50")))

    def test_cards_relearning_the_same_day(self) -> None:
        def lapse(card: object) -> None:
            self.seen(card, TODAY, interval=12, repetitions=3)
            self.rate_next(1)  # Again: back today, in the repeat queue

        self.check_labels(lapse)


class RatingTests(ReviewCase):
    def test_it_stores_the_sm2_state_and_a_log_in_one_go(self) -> None:
        card = make_card()
        self.seen(card, TODAY, interval=6, repetitions=2, easiness=Decimal("2.50"))
        self.rate_next(4)
        state = CardState.objects.get(user=self.user, card=card)
        self.assertEqual((state.easiness, state.interval, state.repetitions), (Decimal("2.50"), 15, 3))
        self.assertEqual((state.due, state.version, state.last_review_day), (TODAY + timedelta(days=15), 4, TODAY))
        log = ReviewLog.objects.get()
        self.assertEqual((log.interval_before, log.interval_after, log.due_before), (6, 15, TODAY))
        self.assertEqual((log.source, log.is_same_day_repeat, log.was_new), ("self", False, False))

    def test_it_records_a_duplicate_rating_once(self) -> None:
        card = make_card()
        request = RatingRequest(card.uuid, 4, 0)
        self.assertEqual(review.rate(self.user, self.profile, request, NOW), Outcome.RECORDED)
        self.assertEqual(review.rate(self.user, self.profile, request, NOW), Outcome.DUPLICATE)
        again = RatingRequest(card.uuid, 5, 1)
        self.assertEqual(review.rate(self.user, self.profile, again, NOW), Outcome.NOT_IN_QUEUE)
        self.assertEqual(review.rate(self.user, self.profile, again, NOW), Outcome.NOT_IN_QUEUE)
        self.assertEqual(ReviewLog.objects.count(), 1)
        self.assertEqual(CardState.objects.get().version, 1)

    def test_it_refuses_a_stale_version(self) -> None:
        card = make_card()
        self.seen(card, TODAY, version=3)
        outcome = review.rate(self.user, self.profile, RatingRequest(card.uuid, 4, 2), NOW)
        self.assertEqual(outcome, Outcome.DUPLICATE)
        self.assertFalse(ReviewLog.objects.exists())

    def test_it_refuses_a_card_that_is_not_due(self) -> None:
        card = make_card()
        state = self.seen(card, TODAY + timedelta(days=3))
        outcome = review.rate(self.user, self.profile, RatingRequest(card.uuid, 4, state.version), NOW)
        self.assertEqual(outcome, Outcome.NOT_IN_QUEUE)
        state.refresh_from_db()
        self.assertEqual((state.version, state.interval), (3, 6))
        self.assertFalse(ReviewLog.objects.exists())

    def test_it_refuses_a_new_card_past_todays_new_card_limit(self) -> None:
        self.profile.new_cards_per_day = 2
        self.profile.save(update_fields=["new_cards_per_day"])
        cards = [make_card() for _ in range(3)]
        for card in cards[:2]:
            self.assertEqual(
                review.rate(self.user, self.profile, RatingRequest(card.uuid, 4, 0), NOW), Outcome.RECORDED
            )
        outcome = review.rate(self.user, self.profile, RatingRequest(cards[2].uuid, 4, 0), NOW)
        self.assertEqual(outcome, Outcome.NEW_LIMIT)
        self.assertIn("limit of new cards", outcome.message)
        self.assertFalse(CardState.objects.filter(card=cards[2]).exists())
        tomorrow = NOW + timedelta(days=1)
        self.assertEqual(
            review.rate(self.user, self.profile, RatingRequest(cards[2].uuid, 4, 0), tomorrow), Outcome.RECORDED
        )

    def test_the_rating_page_and_the_api_say_why_a_new_card_past_the_limit_is_refused(self) -> None:
        self.profile.new_cards_per_day = 1
        self.profile.save(update_fields=["new_cards_per_day"])
        first, second = make_card(), make_card()
        self.client.force_login(self.user)
        body = {"quality": 4, "version": 0, "duration_ms": 0}
        self.assertEqual(self.client.post(reverse("cards:rate", args=[first.uuid]), body).status_code, 302)
        response = self.client.post(reverse("cards:rate", args=[second.uuid]), body)
        self.assertContains(response, "limit of new cards", status_code=409)
        api = APIClient()
        api.force_authenticate(type(self.user).objects.get(pk=self.user.pk))  # not the one with a cached profile
        response = api.post("/api/v1/reviews/", {"card": str(second.uuid), "quality": 4, "version": 0})
        self.assertEqual(response.status_code, 409, response.content)
        self.assertEqual(response.json()["error"]["code"], "new_limit")
        self.assertEqual(ReviewLog.objects.count(), 1)

    def test_it_refuses_qualities_without_a_button(self) -> None:
        card = make_card()
        for quality in (0, 2, 6, -1):
            with self.assertRaises(ValueError):
                review.rate(self.user, self.profile, RatingRequest(card.uuid, quality, 0), NOW)
        self.assertFalse(CardState.objects.exists())

    def test_it_counts_a_lapse_when_a_learned_card_is_forgotten(self) -> None:
        card = make_card()
        self.seen(card, TODAY)
        self.rate_next(1)
        state = CardState.objects.get()
        self.assertEqual((state.lapses, state.repetitions, state.interval, state.needs_repeat), (1, 0, 1, True))


class UndoTests(ReviewCase):
    def test_it_restores_the_state_exactly(self) -> None:
        card = make_card()
        original = self.seen(card, TODAY - timedelta(days=2), easiness=Decimal("2.36"), lapses=2)
        self.rate_next(1)
        self.assertEqual(review.undo_last(self.user, self.profile, NOW), card)
        state = CardState.objects.get(pk=original.pk)
        fields = ["easiness", "interval", "repetitions", "due", "lapses", "last_reviewed_at", "needs_repeat"]
        self.assertEqual([getattr(state, f) for f in fields], [getattr(original, f) for f in fields])
        self.assertEqual(state.last_review_day, None)
        self.assertFalse(ReviewLog.objects.exists())
        self.assertEqual(self.next_item().card, card)

    def test_it_makes_a_new_card_new_again(self) -> None:
        card = make_card()
        self.rate_next(4)
        self.assertEqual(review.undo_last(self.user, self.profile, NOW), card)
        self.assertFalse(CardState.objects.exists())
        self.assertFalse(ReviewLog.objects.exists())
        self.assertEqual(self.next_item().queue, "new")

    def test_it_undoes_a_same_day_repeat_only(self) -> None:
        make_card()
        self.rate_next(1)
        state_after_first = CardState.objects.values().get()
        self.rate_next(4)
        review.undo_last(self.user, self.profile, NOW)
        restored = CardState.objects.values().get()
        self.assertEqual({**restored, "version": 0}, {**state_after_first, "version": 0})
        self.assertEqual(restored["version"], state_after_first["version"] + 2)
        self.assertEqual(ReviewLog.objects.count(), 1)

    def test_it_refuses_when_the_card_changed_since(self) -> None:
        card = make_card()
        self.rate_next(4)
        review.suspend(self.user, self.profile, card, NOW)
        self.assertIsNone(review.undo_last(self.user, self.profile, NOW))
        self.assertEqual(ReviewLog.objects.count(), 1)
        self.assertTrue(CardState.objects.get().suspended)

    def test_it_has_nothing_to_undo_from_yesterday(self) -> None:
        make_card()
        self.rate_next(4)
        self.assertIsNone(review.undo_last(self.user, self.profile, NOW + timedelta(days=1)))
        self.assertEqual(ReviewLog.objects.count(), 1)


class AppendOnlyUndoTests(ReviewCase):
    """Undo appends a reversal: the ledger keeps every row, and every reader counts the pair as nothing."""

    def test_it_keeps_the_undone_entry_and_appends_its_reversal(self) -> None:
        card = make_card()
        self.rate_next(4)
        log = ReviewLog.objects.get()
        later = NOW + timedelta(minutes=5)
        self.assertEqual(review.undo_last(self.user, self.profile, later), card)
        reversal = ReviewLog.ledger.exclude(pk=log.pk).get()
        self.assertEqual((reversal.reverses_id, reversal.reviewed_at, reversal.review_day), (log.pk, later, TODAY))
        self.assertEqual((reversal.card_id, reversal.quality, reversal.source), (card.pk, 4, "self"))
        self.assertEqual(ReviewLog.ledger.filter(pk=log.pk).count(), 1)
        self.assertFalse(ReviewLog.objects.exists())

    def test_the_counts_the_dashboard_and_the_next_undo_read_the_ledger_so(self) -> None:
        first, second = make_cards(2)
        self.rate_next(5)
        self.rate_next(5)
        self.assertEqual(review.undo_last(self.user, self.profile, NOW), second)
        summary = review.dashboard_summary(self.user, self.profile, NOW)
        self.assertEqual((summary.reviewed_today, summary.new, summary.streak), (1, 1, 1))
        self.assertEqual(review.undo_last(self.user, self.profile, NOW), first)  # the one before, not again
        summary = review.dashboard_summary(self.user, self.profile, NOW)
        self.assertEqual((summary.reviewed_today, summary.streak), (0, 0))
        self.assertIsNone(review.undo_last(self.user, self.profile, NOW))
        self.assertEqual(ReviewLog.ledger.count(), 4)
        self.assertEqual(self.next_item().card, first)  # new again: its review counts as nothing

    def test_a_card_rated_again_after_undo_counts_once(self) -> None:
        card = make_card()
        self.rate_next(4)
        review.undo_last(self.user, self.profile, NOW)
        self.rate_next(5)
        self.assertEqual(list(ReviewLog.objects.values_list("card_id", "quality")), [(card.pk, 5)])
        self.assertEqual(review.queue_snapshot(self.user, self.profile, TODAY).reviewed_today, 1)

    def test_one_entry_has_one_reversal_at_most(self) -> None:
        from django.db import IntegrityError, transaction

        make_card()
        self.rate_next(4)
        log = ReviewLog.objects.get()
        review.undo_last(self.user, self.profile, NOW)
        reversal = ReviewLog.ledger.get(reverses=log)
        with self.assertRaises(IntegrityError), transaction.atomic():
            reversal.pk = None
            reversal.save()


class DashboardTests(ReviewCase):
    def test_it_counts_the_streak_up_to_yesterday_or_today(self) -> None:
        days = [TODAY - timedelta(days=n) for n in (1, 2, 3, 5)]
        self.assertEqual(review.streak_days(days, TODAY), 3)
        self.assertEqual(review.streak_days([TODAY, *days], TODAY), 4)
        self.assertEqual(review.streak_days([TODAY - timedelta(days=2)], TODAY), 0)

    def test_it_summarises_today_and_the_next_week(self) -> None:
        cards = make_cards(5)
        self.seen(cards[0], TODAY)
        self.seen(cards[1], TODAY + timedelta(days=1))
        self.seen(cards[2], TODAY + timedelta(days=7))
        self.seen(cards[3], TODAY + timedelta(days=8))
        self.rate_next(4, now=NOW - timedelta(days=1))  # yesterday: new cards[4], due again today
        self.assertEqual(self.rate_next(4).card, cards[0])  # the longer-waiting of today's two
        summary = review.dashboard_summary(self.user, self.profile, NOW)
        self.assertEqual((summary.due, summary.new, summary.reviewed_today, summary.streak), (1, 0, 1, 2))
        # Tomorrow: cards[1]; in a week: cards[2] (cards[0] comes back in 15 days, cards[3] in 8).
        self.assertEqual([day["count"] for day in summary.forecast], [1, 0, 0, 0, 0, 0, 1])
        self.assertEqual(summary.forecast[0]["day"], TODAY + timedelta(days=1))


class InterleavingTests(ReviewCase):
    def test_it_lets_only_one_of_two_interleaved_ratings_write(self) -> None:
        """Request A reads version 3; request B rates completely; A's conditional update must change nothing."""
        card = make_card()
        self.seen(card, TODAY)
        request = RatingRequest(card.uuid, 4, 3)
        real_in_queue = review._in_queue
        outcomes: list[Outcome] = []

        def b_runs_in_between(state: CardState, today: date) -> bool:
            if not outcomes:
                outcomes.append(Outcome.RECORDED)  # guard: B runs once
                outcomes.append(review.rate(self.user, self.profile, request, NOW))
            return real_in_queue(state, today)

        with mock.patch.object(review, "_in_queue", side_effect=b_runs_in_between):
            first = review.rate(self.user, self.profile, request, NOW)
        self.assertEqual((first, outcomes[1]), (Outcome.DUPLICATE, Outcome.RECORDED))
        state = CardState.objects.get()
        self.assertEqual((state.version, state.repetitions), (4, 3))
        self.assertEqual(ReviewLog.objects.count(), 1)


class GraderTests(ReviewCase):
    def test_it_records_a_graded_drill_with_any_sm2_quality(self) -> None:
        card = make_card(kind="drill")
        self.assertEqual(review.record_graded(self.user, card, 2, NOW), Outcome.RECORDED)
        log = ReviewLog.objects.get()
        self.assertEqual((log.quality, log.source, log.was_new), (2, "grader", True))
        # Below 4: a same-day repeat, which does not move SM-2; 0 is a valid grade for the grader.
        self.assertEqual(review.record_graded(self.user, card, 0, NOW), Outcome.RECORDED)
        state = CardState.objects.get()
        self.assertEqual((state.repetitions, state.interval, state.needs_repeat), (0, 1, True))
        with self.assertRaises(ValueError):
            review.record_graded(self.user, card, 6, NOW)

    def test_it_ignores_a_graded_drill_that_is_not_due(self) -> None:
        card = make_card(kind="drill")
        self.seen(card, TODAY + timedelta(days=4))
        self.assertEqual(review.record_graded(self.user, card, 5, NOW), Outcome.NOT_IN_QUEUE)
        self.assertFalse(ReviewLog.objects.exists())

    def test_it_keeps_undo_for_the_learners_own_ratings(self) -> None:
        card = make_card(kind="drill")
        review.record_graded(self.user, card, 5, NOW)
        self.assertIsNone(review.undo_last(self.user, self.profile, NOW))
        self.assertEqual(ReviewLog.objects.count(), 1)
