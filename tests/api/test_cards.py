"""Decks, cards, the review queue, reviews and stats through /api/v1/."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from cards import review as reviewing
from cards.models import Card, CardState, ReviewLog
from tests.api.base import ApiTestCase
from tests.cards.factories import make_card, make_note


class DeckTests(ApiTestCase):
    def test_it_lists_decks_with_active_card_counts(self) -> None:
        make_card(note=self.note, active=False)
        response = self.client.get("/api/v1/decks/")
        self.assertEqual(response.status_code, 200)
        body = response.json()
        self.assertEqual(body["count"], 1)
        self.assertEqual(body["results"][0]["slug"], "pytorch-basics")
        self.assertEqual(body["results"][0]["active_cards"], 3)
        self.assertNotIn("id", body["results"][0])

    def test_it_shows_one_deck_by_slug(self) -> None:
        response = self.client.get("/api/v1/decks/pytorch-basics/")
        self.assertEqual(response.json()["title"], "PyTorch basics")

    def test_it_answers_404_for_an_unknown_deck(self) -> None:
        self.assert_error(self.client.get("/api/v1/decks/nope/"), 404, "not_found")
        self.assert_error(self.client.get("/api/v1/decks/nope/cards/"), 404, "not_found")

    def test_it_lists_a_decks_cards_by_kind(self) -> None:
        cloze = make_card(note=self.note, kind=Card.Kind.CLOZE)
        make_card(note=make_note())  # another deck
        response = self.client.get("/api/v1/decks/pytorch-basics/cards/", {"kind": "cloze"})
        self.assertEqual([c["uuid"] for c in response.json()["results"]], [str(cloze.uuid)])
        everything = self.client.get("/api/v1/decks/pytorch-basics/cards/").json()
        self.assertEqual(everything["count"], 4)

    def test_it_refuses_an_unknown_kind(self) -> None:
        error = self.assert_error(self.client.get("/api/v1/cards/", {"kind": "essay"}), 400, "invalid")
        self.assertIn("kind", error["details"])


class CardTests(ApiTestCase):
    def test_it_lists_active_cards_filtered_by_deck(self) -> None:
        make_card(note=make_note(slug="other"))
        response = self.client.get("/api/v1/cards/", {"deck": "pytorch-basics"})
        uuids = [c["uuid"] for c in response.json()["results"]]
        self.assertEqual(uuids, [str(c.uuid) for c in self.cards])

    def test_it_refuses_a_deck_filter_that_is_not_a_slug(self) -> None:
        error = self.assert_error(self.client.get("/api/v1/cards/", {"deck": "a\x00b"}), 400, "invalid")
        self.assertIn("deck", error["details"])

    def test_it_shows_a_card_with_the_requesters_own_state_only(self) -> None:
        card = self.cards[0]
        CardState.objects.create(user=self.bob, card=card, due=timezone.localdate(), user_note="bob's secret")
        response = self.client.get(f"/api/v1/cards/{card.uuid}/")
        self.assertEqual(response.status_code, 200)
        self.assertIsNone(response.json()["state"])
        self.assertNotIn("bob's secret", response.content.decode())
        CardState.objects.create(user=self.alice, card=card, due=timezone.localdate(), user_note="mine")
        self.assertEqual(self.client.get(f"/api/v1/cards/{card.uuid}/").json()["state"]["user_note"], "mine")

    def test_it_answers_404_for_an_unknown_card(self) -> None:
        self.assert_error(self.client.get("/api/v1/cards/00000000-0000-4000-8000-000000000000/"), 404, "not_found")


class QueueTests(ApiTestCase):
    def test_it_serves_the_next_new_card_with_its_buttons(self) -> None:
        body = self.client.get("/api/v1/review/next/").json()
        self.assertEqual(body["queue"], "new")
        self.assertEqual(body["card"]["uuid"], str(self.cards[0].uuid))
        self.assertEqual(body["version"], 0)
        self.assertEqual([b["rating"] for b in body["buttons"]], [1, 3, 4, 5])
        self.assertEqual(body["counts"]["new"], 3)

    def test_it_says_when_nothing_is_left(self) -> None:
        Card.objects.update(active=False)
        body = self.client.get("/api/v1/review/next/").json()
        self.assertIsNone(body["card"])
        self.assertEqual(body["counts"]["remaining"], 0)


class HotPathTests(ApiTestCase):
    def test_it_serves_the_next_card_in_three_queries(self) -> None:
        profile = reviewing.get_profile(self.alice)  # the profile row exists, as after a learner's first request
        reviewing.queue_snapshot(self.alice, profile, reviewing.learner_today(profile, timezone.now()))  # a warm deck
        # The token with its user and profile, the queue snapshot, the card.
        with self.assertNumQueries(3):
            response = self.client.get("/api/v1/review/next/")
        self.assertEqual(response.status_code, 200)

    def test_it_records_a_new_cards_review_in_eight_queries_and_a_savepoint(self) -> None:
        reviewing.get_profile(self.alice)
        card = self.cards[0]
        # The token, the card, the profile row locked and today's new cards counted again (the new-card limit
        # holds for two reviews at once), the state, the log and the learner day's mark for the teams boards
        # (inserted in one savepoint), the new state to answer.
        with self.assertNumQueries(10):  # eight, plus SAVEPOINT and RELEASE
            response = self.client.post("/api/v1/reviews/", {"card": str(card.uuid), "quality": 4, "version": 0})
        self.assertEqual(response.status_code, 201)


class ReviewTests(ApiTestCase):
    def rate(self, card: Card, quality: int = 4, version: int = 0) -> object:
        return self.client.post("/api/v1/reviews/", {"card": str(card.uuid), "quality": quality, "version": version})

    def test_it_records_a_review_through_the_domain_function(self) -> None:
        card = self.cards[0]
        response = self.rate(card, quality=4)
        self.assertEqual(response.status_code, 201, response.content)
        self.assertEqual(response.json()["state"]["interval"], 1)
        state = CardState.objects.get(user=self.alice, card=card)
        self.assertEqual((state.interval, state.repetitions, state.version), (1, 1, 1))
        log = ReviewLog.objects.get(user=self.alice, card=card)
        self.assertEqual((log.quality, log.was_new), (4, True))
        # The queue moved on to the next card.
        self.assertEqual(self.client.get("/api/v1/review/next/").json()["card"]["uuid"], str(self.cards[1].uuid))

    def test_it_records_a_double_submitted_review_once(self) -> None:
        card = self.cards[0]
        self.assertEqual(self.rate(card).status_code, 201)
        error = self.assert_error(self.rate(card), 409, "already_recorded")
        self.assertIsNone(error["details"])
        self.assertEqual(ReviewLog.objects.filter(user=self.alice).count(), 1)
        state = CardState.objects.get(user=self.alice, card=card)
        self.assertEqual(state.version, 1)

    def test_it_replays_a_stale_version_of_a_seen_card_once(self) -> None:
        card = self.cards[0]
        now = timezone.now()
        reviewing.rate(self.alice, reviewing.get_profile(self.alice), reviewing.RatingRequest(card.uuid, 1, 0), now)
        # Rated Again: the card comes back today as a same-day repeat at version 1.
        self.assertEqual(self.rate(card, quality=4, version=1).status_code, 201)
        self.assert_error(self.rate(card, quality=4, version=1), 409, "already_recorded")
        self.assertEqual(ReviewLog.objects.filter(user=self.alice, card=card).count(), 2)

    def test_it_refuses_a_card_that_is_not_due(self) -> None:
        card = self.cards[0]
        today = timezone.localdate()
        CardState.objects.create(
            user=self.alice, card=card, due=today + timedelta(days=5), last_reviewed_at=timezone.now(), version=3
        )
        self.assert_error(self.rate(card, version=3), 409, "not_in_queue")
        self.assertFalse(ReviewLog.objects.exists())

    def test_it_rejects_bad_input_without_writing(self) -> None:
        card = self.cards[0]
        for body in (
            {"card": str(card.uuid), "quality": 2, "version": 0},
            {"card": "not-a-uuid", "quality": 4, "version": 0},
            {"card": 0, "quality": 4, "version": 0},
            {"card": False, "quality": 4, "version": 0},
            {"card": str(card.uuid), "quality": 4, "version": -1},
            {"quality": 4},
        ):
            with self.subTest(body=body):
                error = self.assert_error(self.client.post("/api/v1/reviews/", body), 400, "invalid")
                self.assertIsInstance(error["details"], dict)
        self.assert_error(
            self.client.post("/api/v1/reviews/", "{not json", content_type="application/json"), 400, "parse_error"
        )
        self.assertFalse(ReviewLog.objects.exists())
        self.assertFalse(CardState.objects.exists())

    def test_it_answers_404_for_another_users_card_state(self) -> None:
        card = self.cards[0]
        CardState.objects.create(user=self.bob, card=card, due=timezone.localdate(), version=4)
        self.assert_error(self.rate(card, version=4), 404, "not_found")
        bob_state = CardState.objects.get(user=self.bob, card=card)
        self.assertEqual(bob_state.version, 4)
        self.assertFalse(ReviewLog.objects.exists())

    def test_it_lists_only_the_requesters_reviews(self) -> None:
        now = timezone.now()
        for user, card in ((self.alice, self.cards[0]), (self.bob, self.cards[1]), (self.bob, self.cards[2])):
            reviewing.rate(user, reviewing.get_profile(user), reviewing.RatingRequest(card.uuid, 5, 0), now)
        body = self.client.get("/api/v1/reviews/").json()
        self.assertEqual(body["count"], 1)
        self.assertEqual(body["results"][0]["card"], str(self.cards[0].uuid))
        self.assertNotIn("id", body["results"][0])
        filtered = self.client.get("/api/v1/reviews/", {"card": str(self.cards[1].uuid)}).json()
        self.assertEqual(filtered["count"], 0)
        self.assert_error(self.client.get("/api/v1/reviews/", {"card": "x"}), 400, "invalid")


class StatsTests(ApiTestCase):
    def test_it_reports_the_requesters_numbers(self) -> None:
        now = timezone.now()
        profile = reviewing.get_profile(self.alice)
        reviewing.rate(self.alice, profile, reviewing.RatingRequest(self.cards[0].uuid, 4, 0), now)
        bob = reviewing.get_profile(self.bob)
        for card in self.cards:
            reviewing.rate(self.bob, bob, reviewing.RatingRequest(card.uuid, 4, 0), now)
        body = self.client.get("/api/v1/stats/").json()
        self.assertEqual(body["summary"]["seen"], 1)
        self.assertEqual(body["reviews_last_90_days"], 1)
        self.assertEqual(body["streak"], 1)
        self.assertEqual(body["queue"]["new"], 2)
        self.assertEqual(len(body["forecast"]), 30)
        self.assertEqual([r["days"] for r in body["retention"]], [7, 30, 90])
