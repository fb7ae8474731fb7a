"""The review queue kept in memory (cards.queueing): the deck it keeps is rebuilt whenever the deck
changes, every other action of the learner is seen at once (the queue agrees with the SQL it replaced
after each step), and new cards follow the learning order: the basics first, a team's order for its
members only, a learner's own notes in their own order."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import TestCase
from django.urls import reverse

from cards import queueing, review
from cards.models import Card, CardState, LearningStage, Note, Profile
from cards.review import Outcome, RatingRequest
from tests.cards import queue_reference
from tests.cards.factories import make_card, make_note, make_user

NOW = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)
TODAY = date(2026, 3, 10)
ORDER_FILE = """
[[stage]]
slug = "tensors"
title = "Tensors"
sections = [{ note = "basics", headings = ["张量"] }, { note = "tips", headings = ["Numpy to PyTorch"] }]

[[stage]]
slug = "autograd"
title = "Autograd"
sections = [{ note = "basics", headings = ["自动求导", "`backward` 的用法"] }]
"""


def write(tmp: Path, text: str) -> Path:
    path = tmp / "learning-order.toml"
    path.write_text(text, encoding="utf-8")
    return path


class QueueAgreesWithTheSQLTests(TestCase):
    """Actions that write no review (suspend, bury, undo, a leech's drill, a retired card) show at once."""

    def setUp(self) -> None:
        self.user = make_user(time_zone="UTC", new_cards_per_day=50, reviews_per_day=50)
        self.profile = Profile.objects.get(user=self.user)
        note = make_note()
        self.cards = [make_card(note=note, heading_path="张量") for _ in range(6)]
        for days, card in enumerate(self.cards[:2]):
            CardState.objects.create(
                user=self.user,
                card=card,
                due=TODAY - timedelta(days=days),
                last_reviewed_at=NOW - timedelta(days=5),
                version=1,
            )

    def check(self) -> queueing.QueueSnapshot:
        snap = review.queue_snapshot(self.user, self.profile, TODAY)
        self.assertEqual(snap, queue_reference.snapshot(self.user, self.profile, TODAY))
        return snap

    def rate_next(self, quality: int = 4) -> Card:
        item = review.next_card(self.user, self.profile, NOW)[0]
        assert item is not None
        request = RatingRequest(item.card.uuid, quality, item.version)
        self.assertEqual(review.rate(self.user, self.profile, request, NOW), Outcome.RECORDED)
        return item.card

    def test_it_agrees_after_every_kind_of_action(self) -> None:
        start = self.check()
        self.assertEqual((start.due, start.new), (2, 4))
        self.rate_next(1)  # the most overdue card: a same-day repeat now
        self.assertEqual(self.check().repeats, 1)
        review.suspend(self.user, self.profile, self.cards[2], NOW)
        review.bury(self.user, self.profile, self.cards[0], NOW)
        after = self.check()
        self.assertEqual((after.due, after.new, after.repeats), (0, 3, 1))
        self.rate_next(4)  # a new card: new cards come before today's repeats
        rated_new = self.rate_next(4)
        self.assertEqual(self.check().new, 1)
        review.undo_last(self.user, self.profile, NOW)
        self.assertEqual((self.check().new, self.check().next_new), (2, rated_new.pk))
        review.suspend(self.user, self.profile, self.cards[2], NOW, suspended=False)
        self.assertEqual((self.check().new, self.check().next_new), (3, self.cards[2].pk))

    def test_it_rebuilds_the_deck_when_a_card_is_retired_or_added_by_any_write(self) -> None:
        self.assertEqual(self.check().new, 4)
        Card.objects.filter(pk=self.cards[2].pk).update(active=False)  # no updated_at given: the queryset sets it
        self.assertEqual(self.check().new, 3)
        Card.objects.bulk_update([Card(pk=self.cards[2].pk, active=True)], ["active"])
        self.assertEqual(self.check().new, 4)
        make_card(note=self.cards[0].note)
        self.assertEqual(self.check().new, 5)

    def test_it_never_shows_a_card_twice_or_misses_a_rated_one(self) -> None:
        met = []
        while (item := review.next_card(self.user, self.profile, NOW)[0]) is not None:
            self.check()
            met.append(item.card.pk)
            review.rate(self.user, self.profile, RatingRequest(item.card.uuid, 4, item.version), NOW)
        self.assertEqual(sorted(met), sorted(c.pk for c in self.cards))
        self.assertEqual(self.check().remaining, 0)


class LearningOrderTests(TestCase):
    def setUp(self) -> None:
        # Note order (by pk) puts autograd first; the learning order puts the tensor basics first.
        self.basics = make_note(slug="basics")
        self.tips = make_note(slug="tips")
        self.autograd = [make_card(note=self.basics, heading_path="自动求导", position=i) for i in range(3)]
        self.curated = make_card(note=self.basics, heading_path="`backward` 的用法", position=3)
        self.tensors = [make_card(note=self.basics, heading_path="张量 › 形状", position=10 + i) for i in range(3)]
        self.mapping = [make_card(note=self.tips, heading_path="Numpy to PyTorch", position=i) for i in range(2)]
        self.own_note = make_note(slug="my-own-anki-deck")
        self.own = [make_card(note=self.own_note, heading_path="Deck", position=9 - i) for i in range(2)]

    def load(self, text: str = ORDER_FILE) -> None:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            call_command("import_learning_order", str(write(Path(tmp), text)), verbosity=0)

    def first_new(self, user: object, n: int) -> list[Card]:
        """The learner's first ``n`` new cards, rated one after another."""
        profile = review.get_profile(user)
        met = []
        for _ in range(n):
            item = review.next_card(user, profile, NOW)[0]
            assert item is not None and item.queue == "new"
            met.append(item.card)
            review.rate(user, profile, RatingRequest(item.card.uuid, 4, item.version), NOW)
        return met

    def test_it_brings_a_learners_first_new_cards_from_the_basics(self) -> None:
        self.load()
        met = self.first_new(make_user(), 5)
        # The tensor stage first, its notes taking turns, each note in its own order.
        self.assertEqual(met, [self.tensors[0], self.mapping[0], self.tensors[1], self.mapping[1], self.tensors[2]])
        later = self.first_new(make_user(), 11)[5:]
        self.assertEqual(later, [*self.autograd, self.curated, self.own[1], self.own[0]])  # own notes: own order

    def test_without_an_order_new_cards_come_in_note_order(self) -> None:
        self.assertEqual(self.first_new(make_user(), 3), self.autograd)

    def test_the_deck_page_shows_the_learning_order(self) -> None:
        self.load()
        self.client.force_login(make_user())
        page = self.client.get(reverse("cards:decks"))
        self.assertEqual([s.slug for s in page.context["order"].stages], ["tensors", "autograd"])
        self.assertEqual(page.context["order"].unstaged, 2)
        self.assertContains(page, "Your new cards come stage by stage, basics first")

    def test_it_updates_and_removes_stages_to_match_the_file(self) -> None:
        self.load()
        first = LearningStage.objects.get(slug="tensors").updated_at
        self.load()
        self.assertEqual(LearningStage.objects.get(slug="tensors").updated_at, first)  # unchanged: not written
        self.load(ORDER_FILE.split('[[stage]]\nslug = "autograd"')[0].replace('"Tensors"', '"Tensor basics"'))
        self.assertEqual(list(LearningStage.objects.values_list("slug", "title")), [("tensors", "Tensor basics")])
        self.assertEqual(self.first_new(make_user(), 1), [self.tensors[0]])

    def test_it_refuses_a_malformed_order_file_and_writes_nothing(self) -> None:
        bad = [
            "not toml [",
            "",
            '[[stage]]\ntitle = "No slug"',
            '[[stage]]\nslug = "a"\ntitle = "A"\n[[stage]]\nslug = "a"\ntitle = "Again"',
            '[[stage]]\nslug = "a b"\ntitle = "A"',
            '[[stage]]\nslug = "a"\ntitle = " "',
            '[[stage]]\nslug = "a"\ntitle = "A"\nsections = [{ headings = ["x"] }]',
            '[[stage]]\nslug = "a"\ntitle = "A"\nsections = [{ note = "basics", headings = "x" }]',
            '[[stage]]\nslug = "a"\ntitle = "A"\nsections = [{ note = "basics", headings = [""] }]',
        ]
        for text in bad:
            with self.subTest(text=text), self.assertRaises(CommandError):
                self.load(text)
        self.assertFalse(LearningStage.objects.exists())
        self.assertFalse(Note.objects.filter(slug="a").exists())


def test_it_finds_the_two_directions_of_a_mapping_row_as_siblings() -> None:
    rows = [
        (1, 7, "Numpy → PyTorch: `np.zeros` 对应什么？", "`torch.zeros`\n(note)"),
        (2, 7, "PyTorch → Numpy: `torch.zeros` 对应什么？", "`np.zeros`"),
        (3, 7, "Numpy → PyTorch: `np.ones` 对应什么？", "`torch.ones`"),
        (4, 8, "PyTorch → Numpy: `torch.ones` 对应什么？", "`np.ones`"),  # another note: not a sibling
    ]
    assert queueing.find_siblings(rows) == {1: (2,), 2: (1,)}


def test_it_ranks_a_teams_stages_then_the_rest_in_the_default_order() -> None:
    stages = [queueing.Stage(slug, slug, {}) for slug in ("a", "b", "c")]
    assert queueing.stage_ranks(stages, ["c", "gone", "c"]) == [1, 2, 0, 3]
    assert queueing.stage_ranks(stages, []) == [0, 1, 2, 3]
    assert queueing.stage_slugs('["b", 3, "a"]') == ("b", "a")
    assert queueing.stage_slugs({"not": "a list"}) == ()


class LearnerOrderTests(LearningOrderTests):
    """The learner's own order (``Profile.learning_order``), whoever wrote it: the queue follows it."""

    def test_it_brings_new_cards_in_the_learners_order_and_the_default_order_to_others(self) -> None:
        self.load()
        reordered = make_user()
        review.get_profile(reordered).set_learning_order(["autograd"], "team:x")  # tensors left out: after it
        self.assertEqual(self.first_new(reordered, 4), [*self.autograd, self.curated])
        self.assertEqual(self.first_new(make_user(), 1), [self.tensors[0]])

    def test_it_ignores_a_stage_a_later_import_removed(self) -> None:
        self.load()
        learner = make_user()
        review.get_profile(learner).set_learning_order(["autograd", "tensors"], "team:x")
        LearningStage.objects.filter(slug="autograd").delete()
        self.assertEqual(self.first_new(learner, 1), [self.tensors[0]])

    def test_it_refuses_an_order_of_unknown_repeated_or_malformed_stages_and_writes_nothing(self) -> None:
        self.load()
        profile = review.get_profile(make_user())
        profile.set_learning_order(["autograd"], "team:x")
        bad = [(["tensors", "gone"], "No such stage: gone."), (["tensors", "tensors"], "repeated: tensors")]
        bad += [("tensors", "a list of stage slugs"), ([1], "a list of stage slugs")]
        for order, message in bad:
            with self.subTest(order=order), self.assertRaisesMessage(ValidationError, message):
                profile.set_learning_order(order, "")  # type: ignore[arg-type]
            profile.refresh_from_db()
            self.assertEqual((profile.learning_order, profile.learning_order_source), (["autograd"], "team:x"))
        profile.learning_order = ["gone"]
        with self.assertRaises(ValidationError):
            profile.full_clean()

    def test_the_decks_page_shows_the_learners_order_and_a_way_back_to_the_default(self) -> None:
        self.load()
        learner = make_user()
        review.get_profile(learner).set_learning_order(["autograd"], "team:x")
        self.client.force_login(learner)
        page = self.client.get(reverse("cards:decks"))
        self.assertEqual([s.slug for s in page.context["order"].stages], ["autograd", "tensors"])
        self.assertContains(page, "Your new cards come stage by stage, in this order:")
        response = self.client.post(reverse("cards:default_order"))
        self.assertRedirects(response, reverse("cards:decks") + "#learning-order")
        profile = Profile.objects.get(user=learner)
        self.assertEqual((profile.learning_order, profile.learning_order_source), ([], Profile.OWN_ORDER))
        self.assertEqual(self.first_new(learner, 1), [self.tensors[0]])
        self.assertEqual(self.client.get(reverse("cards:default_order")).status_code, 405)


class MappingSiblingsTests(TestCase):
    """Issue 28: the reverse side of a mapping row comes as soon as burying lets it, not after the table."""

    def setUp(self) -> None:
        note = make_note(slug="tips")
        rows = [(f"`np.f{i}`", f"`torch.f{i}`") for i in range(6)]
        # As the importer writes a table: every forward card first, then every reverse card.
        self.forward = [
            make_card(note=note, kind="mapping", position=i, front=f"Numpy → PyTorch: {a} 对应什么？", back=b)
            for i, (a, b) in enumerate(rows)
        ]
        self.reverse = [
            make_card(note=note, kind="mapping", position=6 + i, front=f"PyTorch → Numpy: {b} 对应什么？", back=a)
            for i, (a, b) in enumerate(rows)
        ]

    def day(self, user: object, day: int) -> list[Card]:
        """Every card of the day (rated Good), the new ones in the order they came."""
        profile = review.get_profile(user)  # type: ignore[arg-type]
        now = NOW + timedelta(days=day - 1)
        new = []
        while (item := review.next_card(user, profile, now)[0]) is not None:  # type: ignore[arg-type]
            if item.queue == "new":
                new.append(item.card)
            review.rate(user, profile, RatingRequest(item.card.uuid, 4, item.version), now)  # type: ignore[arg-type]
        return new

    def test_the_reverse_side_comes_the_day_after_its_forward_sides_first_review_is_done_with(self) -> None:
        learner = make_user(time_zone="UTC", new_cards_per_day=2)
        self.assertEqual(self.day(learner, 1), self.forward[:2])
        self.assertEqual(self.day(learner, 2), self.forward[2:4])  # rows 0 and 1 are due: their sides wait
        self.assertEqual(self.day(learner, 3), self.reverse[:2])  # not behind the rest of the table
        self.assertEqual(self.day(learner, 4), self.reverse[2:4])

    def test_a_learners_own_import_keeps_its_order(self) -> None:
        learner = make_user(time_zone="UTC", new_cards_per_day=2)
        Note.objects.filter(slug="tips").update(owner=learner)
        Card.objects.filter(note__slug="tips").update(content_hash="x")  # moves the deck stamp: rebuilt
        order = queueing.current_deck().order()
        self.assertEqual(order, [c.pk for c in [*self.forward, *self.reverse]])
