"""A whole day of review, step by step: every count shown is what then comes, and every kind of card comes.

The deck mixes questions, clozes, output cards and mapping rows (both directions) in one section per note,
as the bundled notes do; some cards are due, some directions are due together, limits cap the day. At every
step the review page's counts, the dashboard's and the stats page's agree, and they fall by exactly one per
first answer (a rating below Good adds a same-day repeat); when they reach zero the queue is empty.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from django.test import TestCase

from cards import review, stats
from cards.models import Card, CardState, Profile, ReviewLog
from cards.review import Outcome, RatingRequest
from tests.cards import queue_reference
from tests.cards.factories import make_card, make_note, make_user

NOW = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)  # 18:00 in Shanghai
TODAY = date(2026, 3, 10)
KINDS = (Card.Kind.QA, Card.Kind.CLOZE, Card.Kind.OUTPUT)


def build_deck() -> list[Card]:
    """Three notes, each one section holding every kind of card, mapping rows last (as the importer orders)."""
    cards = []
    for n in range(3):
        note = make_note(slug=f"note-{n}")
        cards += [make_card(note=note, anchor="section", kind=kind) for kind in KINDS for _ in range(2)]
        for i in range(4):
            left, right = f"np.f{n}{i}", f"torch.g{n}{i}"
            for asked, answer, labels in ((left, right, "Numpy → PyTorch"), (right, left, "PyTorch → Numpy")):
                cards.append(
                    make_card(
                        note=note,
                        anchor="section",
                        kind=Card.Kind.MAPPING,
                        front=f"{labels}: `{asked}` 对应什么？",
                        back=f"`{answer}`",
                    )
                )
    return cards


class WholeDayTests(TestCase):
    limits = {"new_cards_per_day": 100, "reviews_per_day": 100}  # the deck, not the limits, ends the day

    def setUp(self) -> None:
        self.user = make_user(time_zone="Asia/Shanghai", **self.limits)
        self.profile = Profile.objects.get(user=self.user)
        self.cards = build_deck()
        # Due today: a few of every kind, and both directions of two rows (only one of each may come).
        mappings = [c for c in self.cards if c.kind == Card.Kind.MAPPING]
        due = [c for c in self.cards if c.kind != Card.Kind.MAPPING][::3] + mappings[:2] + mappings[4:6]
        for days, card in enumerate(due):
            CardState.objects.create(
                user=self.user,
                card=card,
                due=TODAY - timedelta(days=days % 3),
                interval=3,
                repetitions=2,
                last_reviewed_at=NOW - timedelta(days=3, minutes=days),
                version=1,
            )

    def shown(self, now: datetime) -> tuple[int, int, int]:
        """(due, new, again) as the review page shows them, checked against the dashboard and the stats page."""
        item, snap = review.next_card(self.user, self.profile, now)
        # The queue kept in memory (cards.queueing) says exactly what the SQL it replaced says.
        self.assertEqual(
            snap, queue_reference.snapshot(self.user, self.profile, review.learner_today(self.profile, now))
        )
        board = review.dashboard_summary(self.user, self.profile, now)
        summary = stats.collection_summary(self.user, review.learner_today(self.profile, now))
        self.assertEqual((board.due, board.new), (snap.due + snap.repeats, snap.new))
        self.assertEqual(summary["due_today"], snap.due + snap.repeats)
        self.assertEqual(item is None, snap.remaining == 0)
        return snap.due, snap.new, snap.repeats

    def review_day(self, now: datetime, ratings: list[int]) -> list[Card]:
        """Rate every card the day brings, cycling through ``ratings``; check the counts before each one."""
        met: list[Card] = []
        due, new, again = self.shown(now)
        first_answers = due + new
        for step in range(1000):
            item = review.next_card(self.user, self.profile, now)[0]
            if item is None:
                break
            quality = ratings[step % len(ratings)]
            request = RatingRequest(item.card.uuid, quality, item.version)
            self.assertEqual(review.rate(self.user, self.profile, request, now), Outcome.RECORDED)
            met.append(item.card)
            repeat_again = item.queue == "repeat" and quality < 4
            after = self.shown(now)
            expected_left = due + new + again - 1 + (quality < 4 and item.queue != "repeat") + repeat_again
            with self.subTest(step=step, card=item.card.kind, queue=item.queue, quality=quality):
                self.assertEqual(sum(after), expected_left)
                if item.queue == "due":
                    self.assertEqual(after[0], due - 1)
                if item.queue == "new":
                    self.assertEqual((after[0], after[1]), (due, new - 1))
            due, new, again = after
        self.assertEqual((due, new, again), (0, 0, 0))
        logs = ReviewLog.objects.filter(user=self.user, review_day=review.learner_today(self.profile, now))
        self.assertEqual(logs.filter(is_same_day_repeat=False).count(), first_answers)  # every promise kept
        return met

    def test_every_count_is_what_then_comes_and_every_kind_comes(self) -> None:
        met = self.review_day(NOW, [4, 1, 5, 3, 4])
        self.assertEqual({c.kind for c in met}, {*KINDS, Card.Kind.MAPPING})
        firsts = ReviewLog.objects.filter(user=self.user, is_same_day_repeat=False).values_list("card_id", flat=True)
        answered = set(firsts)
        for card in (c for c in self.cards if c.kind == Card.Kind.MAPPING and c.pk in answered):
            sibling = next(
                c for c in self.cards if c.kind == Card.Kind.MAPPING and c.back == f"`{card.front.split('`')[1]}`"
            )
            self.assertNotIn(sibling.pk, answered, "both directions of one row on one day")
        # The next day keeps its promises too, with the directions held back today.
        tomorrow = NOW + timedelta(days=1)
        met_tomorrow = self.review_day(tomorrow, [4])
        self.assertTrue(any(c.kind == Card.Kind.MAPPING and c.pk not in answered for c in met_tomorrow))


class WholeDayWithLimitsTests(WholeDayTests):
    """The same day when the daily limits end it: 12 new cards and 9 reviews."""

    limits = {"new_cards_per_day": 12, "reviews_per_day": 9}
