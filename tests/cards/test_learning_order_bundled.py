"""Issue 39, item 1, on the bundled course as a learner meets it through the queue: every card after its
prerequisites, every kind in the first two days at the default limit, the issue's misplaced cards after
their concepts, a team's stage order still obeyed, a learner's own notes in their own order."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import TestCase

from cards import learning, queueing, review, stats
from cards.ingest.concepts import unmet_needs
from cards.models import Card, CardState, Credit, Profile, ReviewLog, TouchedDay
from cards.review import RatingRequest
from cards.scheduling import fire
from tests.cards.factories import make_card, make_note, make_user

NOTES = Path(settings.BASE_DIR) / "notes"
NOW = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)


class BundledOrderTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        call_command("import_course", str(NOTES), stdout=StringIO(), stderr=StringIO())
        Card.objects.filter(kind=Card.Kind.OUTPUT).update(active=True)  # as the worker's verification leaves them

    def order(self, stages: tuple[str, ...] = ()) -> tuple[queueing.Deck, list[int]]:
        deck = queueing.current_deck()
        return deck, deck.order(stages)

    def test_no_card_comes_before_its_prerequisites_in_any_stage_order(self) -> None:
        deck, order = self.order()
        self.assertEqual(len(deck.tags), Card.objects.filter(active=True).count())
        self.assertTrue(all(teaches for _, teaches, _ in deck.tags.values()), "every bundled card has a concept")
        slugs = [stage.slug for stage in deck.stages]
        for stages in ((), tuple(reversed(slugs)), ("training", "devices")):
            items = deck.items(queueing.stage_ranks(deck.stages, stages))
            self.assertEqual(unmet_needs(items, deck.order(stages)), [], stages)

    def test_the_issues_misplaced_cards_wait_for_their_concepts(self) -> None:
        deck, order = self.order()
        fronts = dict(Card.objects.filter(pk__in=order[:60]).values_list("pk", "front"))
        for word in ("计算图", "pad_sequence", "pack_padded_sequence", "model.eval()", "no_grad", "Dropout"):
            self.assertFalse([f for f in fronts.values() if word in f], word)
        graph = Card.objects.get(front="PyTorch 的计算图是什么时候建立的？")
        self.assertEqual(deck.tags[graph.pk][1], "autograd-graph")
        self.assertIn("requires-grad", deck.tags[graph.pk][2])

    def test_consecutive_cards_stay_within_a_few_started_topics(self) -> None:
        deck, order = self.order()
        topics = [deck.tags[pk][1] for pk in order[:60]]
        self.assertLessEqual(len(set(topics)), 5)  # not five notes' worth of topics taking turns
        repeats = sum(a == b for a, b in zip(topics, topics[1:], strict=False))
        self.assertLessEqual(repeats, 3)  # interleaved (a kind's turn may pick from the topic just seen)

    def test_a_fresh_learner_meets_every_kind_in_two_days(self) -> None:
        learner = make_user(time_zone="UTC")
        profile = review.get_profile(learner)
        self.assertEqual(profile.new_cards_per_day, Profile._meta.get_field("new_cards_per_day").default)
        met: list[Card] = []
        for day in range(2):
            now = NOW + timedelta(days=day)
            while (item := review.next_card(learner, profile, now)[0]) is not None:
                if item.queue == "new":
                    met.append(item.card)
                if item.card.kind == Card.Kind.DRILL:
                    review.record_graded(learner, item.card, 4, now)
                else:
                    review.rate(learner, profile, RatingRequest(item.card.uuid, 4, item.version), now)
        self.assertEqual(len(met), 2 * profile.new_cards_per_day)
        self.assertEqual({card.kind for card in met}, set(Card.Kind.values))

    def test_a_teams_stage_order_moves_its_topics_forward(self) -> None:
        deck, default = self.order()
        _, team = self.order(("training",))
        data = [pk for pk in default if deck.tags[pk][1] == "data"]
        self.assertLess(team.index(data[0]), default.index(data[0]))

    def test_the_tensor_puzzles_come_in_their_authored_order(self) -> None:
        """Issue 38: the puzzles came as their concepts and file names fell (6, 4, 14, 2, ...); now 1, 2, 3..."""
        from graders.models import Drill

        puzzles = dict(Drill.objects.filter(track="tensor-puzzles", active=True).values_list("card_id", "position"))
        self.assertEqual(len(puzzles), 22)
        for stages in ((), ("training",)):
            _, order = self.order(stages)
            met = [puzzles[pk] for pk in order if pk in puzzles]
            self.assertEqual(met, sorted(met), f"stage order {stages}")

    def test_a_track_card_never_moves_earlier_than_its_place(self) -> None:
        # Cards 1..6; 2 and 5 are a track's second and first: 5 waits no more, 2 comes right after it.
        order = queueing.in_track_order([1, 2, 3, 4, 5, 6], {2: ("t", 2), 5: ("t", 1), 4: ("u", 1)})
        self.assertEqual(order, [1, 3, 4, 5, 2, 6])

    def test_a_learners_own_note_comes_after_in_its_own_order(self) -> None:
        learner = make_user(time_zone="UTC")
        own = make_note(slug="my-deck", owner=learner)
        cards = [make_card(note=own, position=10 - i, front=f"`x.view` {i}?", heading_path="张量") for i in range(3)]
        _, order = self.order()
        self.assertEqual(order[-3:], [c.pk for c in reversed(cards)])


class DrillCreditTests(TestCase):
    """Issue 39, item 4 (part): a passed drill credits the cards teaching what it needs (FIRe-style)."""

    @classmethod
    def setUpTestData(cls) -> None:
        call_command("import_course", str(NOTES), stdout=StringIO(), stderr=StringIO())

    def setUp(self) -> None:
        self.deck = queueing.current_deck()
        self.drill = Card.objects.get(key="drill:puzzle-diag")
        self.assertEqual(self.deck.tags[self.drill.pk][1], "tensor-index")
        basis = [
            pk for pk, (kind, teaches, _) in self.deck.tags.items() if teaches == "tensor-create" and kind != "drill"
        ]
        self.other = next(pk for pk, (_, teaches, _) in self.deck.tags.items() if teaches == "tf-to-torch")
        self.basis = basis[: fire.CARDS + 1]

    def learner(self, scheduler: str) -> object:
        user = make_user(time_zone="UTC", scheduler=scheduler)
        for pk in [*self.basis, self.other]:
            CardState.objects.create(
                user=user,
                card_id=pk,
                due=NOW.date(),
                stability=5.0,
                difficulty=5.0,
                repetitions=2,
                interval=4,
                last_reviewed_at=NOW - timedelta(days=4),
                last_review_day=NOW.date() - timedelta(days=4),
                version=1,
            )
        return user

    def states(self, user: object) -> dict[int, tuple[float, object]]:
        return {s.card_id: (s.stability, s.due) for s in CardState.objects.filter(user=user).exclude(card=self.drill)}

    def test_a_passed_drill_moves_the_cards_it_builds_on_later_without_a_review(self) -> None:
        user = self.learner("fsrs")
        before, logs = self.states(user), ReviewLog.objects.count()
        self.assertEqual(review.record_graded(user, self.drill, 4, NOW), review.Outcome.RECORDED)
        after = self.states(user)
        moved = [pk for pk in self.basis if after[pk] != before[pk]]
        self.assertEqual(len(moved), fire.CARDS)  # the cap: the due-soonest few
        for pk in moved:
            self.assertGreater(after[pk][0], before[pk][0])
            self.assertGreater(after[pk][1], before[pk][1])
        self.assertEqual(after[self.other], before[self.other])  # a concept the drill does not need
        self.assertEqual(ReviewLog.objects.count(), logs + 1)  # the drill's own review only

    def test_no_credit_for_a_hard_pass_or_under_sm2(self) -> None:
        for scheduler, quality in (("fsrs", 3), ("sm2", 5)):
            user = self.learner(scheduler)
            before = self.states(user)
            self.assertEqual(review.record_graded(user, self.drill, quality, NOW), review.Outcome.RECORDED)
            self.assertEqual(self.states(user), before, scheduler)

    def full_states(self, user: object) -> dict[int, dict[str, object]]:
        return {s["card_id"]: s for s in CardState.objects.filter(user=user).exclude(card=self.drill).values()}

    def test_the_deck_indexes_the_cards_teaching_each_concept(self) -> None:
        walked = [
            pk for pk, (kind, teaches, _) in self.deck.tags.items() if teaches == "tensor-create" and kind != "drill"
        ]
        self.assertEqual(list(self.deck.teachers["tensor-create"]), walked)
        self.assertNotIn(self.drill.pk, self.deck.teachers["tensor-index"])

    def test_undoing_the_drills_rating_puts_every_credited_card_back_exactly(self) -> None:
        """The credit is part of the rating's recorded effect (``Credit`` rows beside its log entry): an undo of
        that entry restores the credited states field for field, their versions moved on as after any change."""
        for seen in (False, True):
            with self.subTest(drill_seen_before=seen):
                user = self.learner("fsrs")
                if seen:  # a drill due today (the review queue's), not a new one
                    CardState.objects.create(
                        user=user, card=self.drill, due=NOW.date(), stability=3.0, difficulty=6.0, repetitions=1,
                        interval=3, last_reviewed_at=NOW - timedelta(days=3),
                        last_review_day=NOW.date() - timedelta(days=3), version=3,
                    )  # fmt: skip
                drill_before = CardState.objects.filter(user=user, card=self.drill).values().first()
                before = self.full_states(user)
                self.assertEqual(review.record_graded(user, self.drill, 4, NOW), review.Outcome.RECORDED)
                log = ReviewLog.objects.get(user=user, card=self.drill)
                credited = {c.card_id for c in Credit.objects.filter(review=log)}
                self.assertEqual(len(credited), fire.CARDS)
                moved = {pk for pk, state in self.full_states(user).items() if state != before[pk]}
                self.assertEqual(moved, credited)
                self.assertTrue(review.undo_review(user, log, NOW + timedelta(minutes=1)))
                after = self.full_states(user)
                for pk, state in before.items():
                    bumps = 2 if pk in credited else 0  # the credit, then its undo
                    self.assertEqual(after[pk], {**state, "version": state["version"] + bumps}, pk)
                drill_after = CardState.objects.filter(user=user, card=self.drill).values().first()
                if seen:
                    self.assertEqual(drill_after, {**drill_before, "version": drill_before["version"] + 2})
                else:
                    self.assertIsNone(drill_after)  # new again
                self.assertFalse(ReviewLog.objects.filter(user=user).exists())

    def test_an_undo_refuses_when_a_credited_card_changed_since(self) -> None:
        user = self.learner("fsrs")
        review.record_graded(user, self.drill, 4, NOW)
        log = ReviewLog.objects.get(user=user, card=self.drill)
        credit = Credit.objects.filter(review=log).first()
        assert credit is not None
        review.suspend(user, review.get_profile(user), credit.card, NOW)
        states = self.full_states(user)
        self.assertFalse(review.undo_review(user, log, NOW))
        self.assertEqual(self.full_states(user), states)  # nothing restored, the drill's state neither
        self.assertTrue(CardState.objects.filter(user=user, card=self.drill).exists())
        self.assertEqual(ReviewLog.ledger.filter(user=user).count(), 1)

    def test_the_queue_the_forecast_and_the_versions_see_the_credit_at_once(self) -> None:
        """A credit moves due days like a rating: the queue and the forecast read it on the next request, and
        each credited state's version moves, so a client or cache keyed on versions knows it changed."""
        user = self.learner("fsrs")
        profile = review.get_profile(user)
        today = NOW.date()
        versions = dict(CardState.objects.filter(user=user).values_list("card_id", "version"))
        self.assertEqual(review.queue_snapshot(user, profile, today).due, len(self.basis) + 1)
        self.assertEqual(stats.due_forecast(user, today, 30)[0]["count"], len(self.basis) + 1)
        review.record_graded(user, self.drill, 4, NOW)
        self.assertEqual(review.queue_snapshot(user, profile, today).due, len(self.basis) + 1 - fire.CARDS)
        forecast = stats.due_forecast(user, today, 30)
        self.assertEqual(forecast[0]["count"], len(self.basis) + 1 - fire.CARDS)
        credits = Credit.objects.filter(review__user=user)
        later = Counter([c.due_after for c in credits] + [CardState.objects.get(user=user, card=self.drill).due])
        self.assertEqual({day["day"]: day["count"] for day in forecast[1:] if day["count"]}, dict(later))
        for credit in credits:
            state = CardState.objects.get(user=user, card=credit.card)
            self.assertEqual((state.due, state.stability), (credit.due_after, credit.stability_after))
            self.assertEqual(state.version, versions[credit.card_id] + 1)
        self.assertTrue(TouchedDay.objects.filter(user=user, day=today).exists())


def test_an_order_file_whose_concepts_do_not_form_a_graph_is_refused(tmp_path: Path) -> None:
    stage = '[[stage]]\nslug = "s"\ntitle = "S"\nsections = []\n'
    concepts = (
        '[[stage.concept]]\nslug = "b"\nrequires = ["a"]\n[[stage.concept]]\nslug = "a"\n',  # a later one
        '[[stage.concept]]\nslug = "a"\nkeywords = ["("]\n',
        '[[stage.concept]]\ntitle = "no slug"\n',
    )
    path = tmp_path / "learning-order.toml"
    for concept, says in zip(concepts, ("requires 'a'", "keyword", "needs a slug"), strict=True):
        path.write_text(stage + concept, encoding="utf-8")
        with pytest.raises(learning.OrderFileError, match=says):
            learning.read_order_file(path)
    path.write_text(stage + '[[stage.concept]]\nslug = "a"\n[[stage.concept]]\nslug = "b"\nrequires = ["a"]\n')
    assert [c["slug"] for c in learning.read_order_file(path)[0].concepts] == ["a", "b"]
